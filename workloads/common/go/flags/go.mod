module perflab/flags

go 1.21
