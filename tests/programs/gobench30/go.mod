module perflab.test/gobench30

go 1.21
