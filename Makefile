EXTENSION = hbird
MODULE_big = hbird
DATA = $(wildcard sql/hbird--*.sql)

CORE_SRCS = $(wildcard src/core/*.c)
PG_SRCS = $(wildcard src/*.c)
OBJS = $(PG_SRCS:.c=.o) $(CORE_SRCS:.c=.o)

# setup first, then every other suite in sql/ (install scripts excluded)
REGRESS = setup $(sort $(filter-out setup hbird--%,$(basename $(notdir $(wildcard sql/*.sql)))))
REGRESS_OPTS = --inputdir=.

PG_CPPFLAGS = -Isrc/core -std=gnu11
SHLIB_LINK = -lopenblas -lm

# CUDA (docs/gpu.md): built when nvcc is found, unless USE_CUDA=0; USE_CUDA=1
# insists.  The runtime is linked statically, so the library loads on
# machines without a driver and finds out at first use.
NVCC ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
ifeq ($(origin USE_CUDA),undefined)
USE_CUDA := $(if $(NVCC),1,0)
endif
ifeq ($(USE_CUDA),1)
ifeq ($(NVCC),)
$(error USE_CUDA=1 but nvcc was not found: put it on PATH or pass NVCC=/path/to/nvcc)
endif
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
# sm_90 (H100, H200) machine code, plus PTX that newer GPUs compile at load
CUDA_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
NVCC_FLAGS ?= -O3 -std=c++17 -Xcompiler -fPIC,-Wall $(CUDA_ARCH)
CUDA_OBJ = src/cuda/hb_cuda.o
CUDA_LIBS = -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lpthread -lrt -lstdc++
PG_CPPFLAGS_CUDA = -DHB_USE_CUDA
endif

PG_CPPFLAGS += $(PG_CPPFLAGS_CUDA)
# not in OBJS: PGXS would look for LLVM bitcode of it
SHLIB_LINK += $(CUDA_OBJ) $(CUDA_LIBS)
EXTRA_CLEAN = src/cuda/hb_cuda.o

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

ifeq ($(USE_CUDA),1)
$(shlib): $(CUDA_OBJ)
$(CUDA_OBJ): src/cuda/hb_cuda.cu src/cuda/hb_cuda.h
	$(NVCC) $(NVCC_FLAGS) -c -o $@ $<
endif

# C unit tests of the core: no PostgreSQL involved
CORE_CFLAGS = -std=gnu11 -O2 -g -Wall -Wextra -Isrc/core
TEST_BINS = $(patsubst tests/core/%.c,tests/core/bin/%,$(wildcard tests/core/test_*.c))

tests/core/bin/%: tests/core/%.c $(CORE_SRCS) $(wildcard src/core/*.h) $(wildcard tests/core/*.h) $(CUDA_OBJ)
	@mkdir -p tests/core/bin
	$(CC) $(CORE_CFLAGS) $(PG_CPPFLAGS_CUDA) -o $@ $< $(CORE_SRCS) $(CUDA_OBJ) -lopenblas -lm $(CUDA_LIBS)

.PHONY: core-tests
core-tests: $(TEST_BINS)

clean: clean-core-tests
.PHONY: clean-core-tests
clean-core-tests:
	rm -rf tests/core/bin

# Sanitizers (scripts/sanitize.sh): core unit tests with ASan + UBSan, under
# valgrind memcheck, and the regression suites against an ASan + UBSan build
.PHONY: sanitize-core valgrind-core sanitize-check
sanitize-core:
	bash scripts/sanitize.sh core
valgrind-core:
	bash scripts/sanitize.sh valgrind
sanitize-check:
	bash scripts/sanitize.sh check
