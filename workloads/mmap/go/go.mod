module perflab/mmapchurn

go 1.21

require (
	perflab/flags v0.0.0
	perflab/region v0.0.0
)

replace (
	perflab/flags => ../../common/go/flags
	perflab/region => ../../common/go/region
)
