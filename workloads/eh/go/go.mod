module perflab/eh

go 1.21

require perflab/region v0.0.0

replace perflab/region => ../../common/go/region
