module perflab.test/gobench

go 1.21
