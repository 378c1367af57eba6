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

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# C unit tests of the core: no PostgreSQL involved
CORE_CFLAGS = -std=gnu11 -O2 -g -Wall -Wextra -Isrc/core
TEST_BINS = $(patsubst tests/core/%.c,tests/core/bin/%,$(wildcard tests/core/test_*.c))

tests/core/bin/%: tests/core/%.c $(CORE_SRCS) $(wildcard src/core/*.h) $(wildcard tests/core/*.h)
	@mkdir -p tests/core/bin
	$(CC) $(CORE_CFLAGS) -o $@ $< $(CORE_SRCS) -lopenblas -lm

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
