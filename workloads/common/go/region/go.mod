module perflab/region

go 1.21
