# The shared rules of a one-file C workload's Makefile (`make -s` in the workload's directory).
# Set PROG (the binary, under build/), SRC (the .c file), CFLAGS and LDLIBS, then
#   include ../../common/c/workload.mk
# It adds this directory (perflab_workload.h) and the repository's include/ (perflab_region.h) to
# the include path and rebuilds when either header changes.
COMMON_C := $(dir $(lastword $(MAKEFILE_LIST)))
CPPFLAGS += -I$(COMMON_C)../../../include -I$(COMMON_C)
DEPS     += $(COMMON_C)perflab_workload.h $(COMMON_C)../../../include/perflab_region.h

$(PROG): $(SRC) $(DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $(SRC) $(LDLIBS)

clean:
	rm -rf build

.PHONY: clean
