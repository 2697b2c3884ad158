# npucc top-level build. Out of tree in build/ (build/asan/ for the sanitizer
# build). Folders are stages; every .c in a stage folder is part of the library
# except *_main.c, which are tool entry points.

BUILD   ?= build
CC      ?= gcc
PYTHON  ?= /usr/bin/python3
SAN     ?=
OPT     ?= -O2

CFLAGS_BASE = -std=c11 -Wall -Wextra -Werror -g $(OPT) -D_POSIX_C_SOURCE=200809L \
              -I. -Isrc -I$(BUILD)/gen -MMD -MP
ifeq ($(SAN),1)
CFLAGS_BASE += -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS     += -fsanitize=address,undefined
endif
# the fuzz build (build/fuzz, clang): coverage for libFuzzer in every object
ifeq ($(SAN),fuzz)
CFLAGS_BASE += -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS     += -fsanitize=address,undefined
endif
CFLAGS  += $(CFLAGS_BASE)
LDLIBS  += -lprotobuf-c -lyaml -lpng -lm

# ---- sources -------------------------------------------------------------
LIB_DIRS  = src/common src/ir src/numerics src/import src/opt src/ref src/target src/format src/partition \
            src/quantize src/tiler src/memplan src/emit src/driver calib kernels
LIB_SRCS  = $(filter-out %_main.c,$(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c)))
SIM_SRCS  = $(filter-out %_main.c,$(wildcard sim/*.c))
RT_SRCS   = $(filter-out %_main.c,$(wildcard rt/*.c))
GEN_SRCS  = $(BUILD)/gen/onnx/onnx.pb-c.c

LIB_OBJS  = $(LIB_SRCS:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/gen/onnx.pb-c.o
SIM_OBJS  = $(SIM_SRCS:%.c=$(BUILD)/obj/%.o)
RT_OBJS   = $(RT_SRCS:%.c=$(BUILD)/obj/%.o)

LIBNPUCC  = $(BUILD)/libnpucc.a
LIBNPUSIM = $(BUILD)/libnpusim.a
LIBNPURT  = $(BUILD)/libnpurt.a

TOOLS     = $(patsubst src/driver/%_main.c,$(BUILD)/%,$(wildcard src/driver/*_main.c))
ifneq ($(SIM_SRCS)$(wildcard sim/*_main.c),)
TOOLS    += $(patsubst sim/%_main.c,$(BUILD)/%,$(wildcard sim/*_main.c))
HAVE_SIM  = 1
endif

UNIT_SRCS = $(wildcard tests/unit/test_*.c)
UNIT_BINS = $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
TEST_SUPPORT = $(wildcard tests/support/*.c)
TEST_SUPPORT_OBJS = $(TEST_SUPPORT:%.c=$(BUILD)/obj/%.o)

# ---- firmware for the simulated host (rv32imafc, picolibc) ---------------
FW_CC     = riscv64-unknown-elf-gcc
FW_CFLAGS = --specs=picolibc.specs -march=rv32imafc -mabi=ilp32f -Os -g -std=c11 \
            -Wall -Wextra -Werror -ffreestanding -I. -Isrc -Irt
FW_SRCS   = $(wildcard rt/*.c) $(wildcard kernels/*.c)
FW_ELF    = $(BUILD)/fw/npurt.elf

.SECONDARY:
.PHONY: man all deps test test-stages test-layering test-funcs test-unit test-conf test-diff difftest test-e2e test-asan demo bench clean fw fixtures \
        fuzz fuzz-build fuzz-bins test-fuzz
all: $(TOOLS) $(UNIT_BINS) $(if $(wildcard rt/fw.ld),$(FW_ELF)) man

# ---- set-up on a fresh Debian machine -------------------------------------
DEB_PKGS = build-essential libunicorn-dev libprotobuf-c-dev protobuf-c-compiler libyaml-dev \
           libcriterion-dev libonnx-dev gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf \
           python3-onnx python3-numpy libpng-dev dataset-fashion-mnist \
           python3-torch python3-torchvision nodejs cmake pkg-config clang libclang-rt-14-dev afl++ \
           python3-yaml gnuplot-nox slurmctld slurmd slurm-client munge
# npm only without an npm command (NodeSource's nodejs ships one and conflicts
# with Debian's npm). onnxruntime-node (tests/e2e/qdq.sh, bench --ort) lives in tools/ort/node_modules,
# the one place tools/ort/run.js loads it from; setup.sh skips it when present.
deps:
	@missing=$$(for p in $(DEB_PKGS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
	  | grep -q 'install ok installed' || echo $$p; done; \
	  command -v npm >/dev/null || echo npm); \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q $$missing; \
	fi
	@tools/ort/setup.sh

# ---- generated protobuf-c code for ONNX -----------------------------------
ONNX_PROTO ?= /usr/include/onnx/onnx.proto
$(BUILD)/gen/onnx/onnx.pb-c.c $(BUILD)/gen/onnx/onnx.pb-c.h: $(ONNX_PROTO)
	@mkdir -p $(BUILD)/gen
	protoc-c --proto_path=$(dir $(ONNX_PROTO)).. --c_out=$(BUILD)/gen onnx/onnx.proto

$(BUILD)/obj/gen/onnx.pb-c.o: $(BUILD)/gen/onnx/onnx.pb-c.c
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -Werror -Wextra,$(CFLAGS)) -c $< -o $@

# ---- --help and man pages: the tools' sections of docs/cli.md ---------------
MAN_TOOLS = npucc npusim npuref npudis
$(BUILD)/gen/man/%_help.h: docs/cli.md tools/gen_man.py
	@mkdir -p $(dir $@)
	$(PYTHON) tools/gen_man.py docs/cli.md $* help $@
$(BUILD)/man/%.1: docs/cli.md tools/gen_man.py
	@mkdir -p $(dir $@)
	$(PYTHON) tools/gen_man.py docs/cli.md $* man $@
$(BUILD)/obj/src/driver/npucc_main.o: $(BUILD)/gen/man/npucc_help.h
$(BUILD)/obj/src/driver/npuref_main.o: $(BUILD)/gen/man/npuref_help.h
$(BUILD)/obj/src/driver/npudis_main.o: $(BUILD)/gen/man/npudis_help.h
$(BUILD)/obj/sim/npusim_main.o: $(BUILD)/gen/man/npusim_help.h
man: $(MAN_TOOLS:%=$(BUILD)/man/%.1)

# the IR's op names for the graph-section reader below the IR (src/format)
$(BUILD)/gen/opnames/ir_op_names.h: src/ir/ops.def
	@mkdir -p $(dir $@)
	sed -n 's/^IR_OP(\([A-Z0-9_]*\), *\("[^"]*"\)).*/    \2, \/* IR_OP_\1 *\//p' $< > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/src/format/graph_nodes.o: $(BUILD)/gen/opnames/ir_op_names.h

# every object may include the generated header
$(LIB_OBJS) $(SIM_OBJS) $(RT_OBJS) $(TEST_SUPPORT_OBJS): | $(BUILD)/gen/onnx/onnx.pb-c.h

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(LIBNPUCC): $(LIB_OBJS)
	@mkdir -p $(dir $@); rm -f $@
	ar rcs $@ $^
$(LIBNPUSIM): $(SIM_OBJS)
	@mkdir -p $(dir $@); rm -f $@
	ar rcs $@ $^
$(LIBNPURT): $(RT_OBJS) $(filter $(BUILD)/obj/kernels/%,$(LIB_OBJS))
	@mkdir -p $(dir $@); rm -f $@
	ar rcs $@ $^

SIM_LIBS = $(if $(HAVE_SIM),$(LIBNPUSIM) -lunicorn -lpthread)

$(BUILD)/%: $(BUILD)/obj/src/driver/%_main.o $(LIBNPUCC) $(LIBNPURT)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
$(BUILD)/npusim: $(BUILD)/obj/sim/npusim_main.o $(LIBNPUSIM) $(LIBNPUCC) $(LIBNPURT) $(if $(wildcard rt/fw.ld),$(FW_ELF))
	$(CC) $(LDFLAGS) $(filter %.o %.a,$^) $(LDLIBS) -lunicorn -lpthread -o $@

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(TEST_SUPPORT_OBJS) $(if $(HAVE_SIM),$(LIBNPUSIM)) $(LIBNPURT) $(LIBNPUCC)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(filter %.o,$^) $(if $(HAVE_SIM),$(LIBNPUSIM)) $(LIBNPUCC) $(LIBNPURT) $(LDLIBS) \
	  -lcriterion $(if $(HAVE_SIM),-lunicorn -lpthread) -o $@

$(FW_ELF): $(FW_SRCS) $(wildcard rt/*.h kernels/*.h kernels/*.inc) rt/fw.ld
	@mkdir -p $(dir $@)
	$(FW_CC) $(FW_CFLAGS) -T rt/fw.ld -Wl,--no-relax $(FW_SRCS) -lm -o $@
fw: $(FW_ELF)

# make install / uninstall and the rv32 builds of libnpurt
include mk/install.mk

# ---- tests ------------------------------------------------------------------
# The stages: unit tests, conformance, end-to-end (after `make fixtures`), and
# the unit tests again under ASan+UBSan in build/asan. Each stage names what it
# needs, so `make -j2 test` runs them side by side (the ASan build compiles
# while build/ is tested); --output-sync keeps each stage's output together.
test: deps
	$(MAKE) --output-sync=target test-stages
test-stages: test-layering test-funcs test-unit test-conf test-diff test-e2e test-asan test-fuzz

# the include graph against docs/architecture.md's layering
test-layering:
	tests/layering.sh

# no product-code function over 100 lines (docs/conventions.md)
test-funcs:
	tests/func_length.sh

test-unit: all
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; NPUCC_ROOT=$(CURDIR) NPUCC_BUILD=$(BUILD) \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp \
	  $$t --jobs 2 --short-filename; done

fixtures: all
	@if [ -x tests/fixtures/gen.sh ]; then tests/fixtures/gen.sh $(BUILD)/fixtures; fi

test-conf: all fixtures
	@if [ -x tests/conformance/run.sh ]; then tests/conformance/run.sh $(BUILD); fi
	@if [ -x tests/conformance/run_sim.sh ]; then tests/conformance/run_sim.sh $(BUILD); fi

# random small models against onnxruntime, and compiled against npuref MODEL.npub
# (tests/diff, docs/testing.md "Differential run"): a fixed seed here, new
# ones with `make difftest` (DIFF_COUNT models, DIFF_SEED)
test-diff: all
	tests/diff/run.sh $(BUILD) 240 24
DIFF_COUNT ?= 2000
difftest: deps
	$(MAKE) all
	tests/diff/run.sh $(BUILD) $(DIFF_COUNT) $${DIFF_SEED:-$$(date +%s)}

test-e2e: all fixtures
	@if [ -x tests/e2e/run.sh ]; then tests/e2e/run.sh $(BUILD); fi
	@if [ -x tests/e2e/multi_input.sh ]; then tests/e2e/multi_input.sh $(BUILD); fi
	@if [ -x tests/e2e/norm.sh ]; then tests/e2e/norm.sh $(BUILD); fi
	@if [ -x tests/e2e/unary.sh ]; then tests/e2e/unary.sh $(BUILD); fi
	@if [ -x tests/e2e/io_types.sh ]; then tests/e2e/io_types.sh $(BUILD); fi
	@if [ -x tests/e2e/sign.sh ]; then tests/e2e/sign.sh $(BUILD); fi
	@if [ -x tests/e2e/models.sh ]; then tests/e2e/models.sh $(BUILD); fi
	@if [ -x tests/e2e/threads.sh ]; then tests/e2e/threads.sh $(BUILD); fi
	tests/e2e/cli.sh $(BUILD)
	tests/e2e/install.sh $(BUILD)
	tests/e2e/firmware.sh $(BUILD)
	tests/e2e/hostile.sh $(BUILD)
	@if [ -x tests/qdq/run.sh ]; then tests/qdq/run.sh $(BUILD); fi
	tests/e2e/ref_threads.sh $(BUILD)
	tests/e2e/sweep_set.sh $(BUILD)
	tests/e2e/sweep.sh $(BUILD)
	tests/e2e/slurm.sh $(BUILD)
	tests/e2e/trace.sh $(BUILD)
	tests/e2e/timing.sh $(BUILD)
	@if [ -x tests/e2e/memlevels.sh ]; then tests/e2e/memlevels.sh $(BUILD); fi
	tests/e2e/fuse.sh $(BUILD)
	tests/e2e/xlayer.sh $(BUILD)
	@if [ -x tests/e2e/a16.sh ]; then tests/e2e/a16.sh $(BUILD); fi
	@if [ -x tests/e2e/precision.sh ]; then tests/e2e/precision.sh $(BUILD); fi

test-asan:
	$(MAKE) BUILD=build/asan SAN=1 OPT=-O1 test-unit

# ---- fuzzing (tests/fuzz, docs/testing.md "Fuzzing") --------------------------
# libFuzzer harnesses built with clang in build/fuzz: build/fuzz/fz/NAME, and
# build/fuzz/replay/NAME (the same harness with tests/fuzz/fuzz_driver.c's main:
# replays files, or reads stdin for AFL++). `make fuzz` runs each harness for
# FUZZ_TIME seconds; test-fuzz runs a short fixed number and replays the
# saved crashes (tests/fuzz/run.sh).
FUZZ_TIME ?= 600
FUZZ_CC   ?= clang
FUZZ_DIR   = build/fuzz
FUZZ_NAMES = $(patsubst tests/fuzz/fz_%.c,%,$(wildcard tests/fuzz/fz_*.c))
FUZZ_SUPPORT = tests/fuzz/fuzz_util.c tests/fuzz/fuzz_npub.c
FUZZ_SUPPORT_OBJS = $(FUZZ_SUPPORT:%.c=$(BUILD)/obj/%.o)
$(BUILD)/obj/tests/fuzz/%.o: CFLAGS += -DFUZZ_ROOT='"$(CURDIR)"'
$(FUZZ_SUPPORT_OBJS) $(FUZZ_NAMES:%=$(BUILD)/obj/tests/fuzz/fz_%.o): | $(BUILD)/gen/onnx/onnx.pb-c.h
FUZZ_LIBS = $(FUZZ_SUPPORT_OBJS) $(LIBNPUSIM) $(LIBNPUCC) $(LIBNPURT)
$(BUILD)/fz/%: $(BUILD)/obj/tests/fuzz/fz_%.o $(FUZZ_LIBS)
	@mkdir -p $(dir $@)
	$(CC) -fsanitize=fuzzer,address,undefined $(filter %.o %.a,$^) $(LDLIBS) -lunicorn -lpthread -o $@
$(BUILD)/replay/%: $(BUILD)/obj/tests/fuzz/fz_%.o $(BUILD)/obj/tests/fuzz/fuzz_driver.o $(FUZZ_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(filter %.o %.a,$^) $(LDLIBS) -lunicorn -lpthread -o $@
fuzz-bins: $(FUZZ_NAMES:%=$(BUILD)/fz/%) $(FUZZ_NAMES:%=$(BUILD)/replay/%)
fuzz-build:
	$(MAKE) BUILD=$(FUZZ_DIR) CC=$(FUZZ_CC) SAN=fuzz OPT=-O1 fuzz-bins
fuzz: fuzz-build
	FUZZ_TIME=$(FUZZ_TIME) tests/fuzz/run.sh fuzz $(FUZZ_DIR) $(FUZZ_NAMES)
test-fuzz: fuzz-build
	tests/fuzz/run.sh test $(FUZZ_DIR) $(FUZZ_NAMES)
# AFL++ (Debian's afl++): the same harnesses through fuzz_driver.c's persistent
# loop, built with afl-clang-fast and ASan+UBSan into build/afl/replay/NAME;
# `make fuzz-afl` runs afl-fuzz on each (AFL_NAMES, default all) for FUZZ_TIME s.
AFL_CC    ?= afl-clang-fast
AFL_NAMES ?= $(FUZZ_NAMES)
afl-build:
	$(MAKE) BUILD=build/afl CC=$(AFL_CC) SAN=1 OPT=-O1 $(AFL_NAMES:%=build/afl/replay/%)
fuzz-afl: afl-build
	FUZZ_TIME=$(FUZZ_TIME) tests/fuzz/afl.sh build/afl $(AFL_NAMES)

demo: deps
	$(MAKE) all
	@if [ -x examples/demo.sh ]; then examples/demo.sh $(BUILD); else echo "demo: not built yet"; fi

bench: all
	@if [ -x bench/run.sh ]; then bench/run.sh $(BUILD); else echo "bench: none yet"; fi

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
