# make install / uninstall, and the rv32 builds of libnpurt (docs/runtime.md,
# "Installing"). Included by the top-level Makefile, which defines BUILD, the
# tools, LIBNPURT, FW_ELF and MAN_TOOLS.
#
#   PREFIX/bin/                         npucc npusim npuref npudis
#   PREFIX/share/npucc/{targets,isa}/   the descriptions, found by the tools
#   PREFIX/share/npucc/fw/npurt.elf     npusim's firmware      from <exe>/../share/npucc
#   PREFIX/include/npurt/               the public headers (self-contained, extern "C")
#   PREFIX/lib/libnpurt.a               the host build
#   PREFIX/lib/riscv32/V/libnpurt.a     V = <march>-<mabi>, NPURT_RV32_VARIANTS
#   PREFIX/lib/pkgconfig/npurt.pc, npurt-V.pc
#   PREFIX/lib/cmake/npurt/             npurtConfig.cmake, ...ConfigVersion.cmake,
#                                       npurt-riscv32-toolchain.cmake
#   PREFIX/share/man/man1/TOOL.1

PREFIX  ?= /usr/local
DESTDIR ?=
NPUCC_VERSION = 0.1.0

# The public headers of libnpurt, installed flat into include/npurt/. Their
# includes of each other ("rt/X.h") become "X.h" there, so they need nothing
# but include/; a header added here must include only headers of this list.
NPURT_PUBLIC_HEADERS = rt/npub.h rt/npurt_ops.h rt/npurt.h rt/npurt_hal.h rt/npurt_model.h
# The rv32 builds: <march>-<mabi>, each a picolibc multilib of $(FW_CC).
NPURT_RV32_VARIANTS = rv32imac-ilp32 rv32imafc-ilp32f
# The portable runtime: rt/ without the simulated SoC's own firmware (fw_*),
# and the kernels. Sections per function and object, so a firmware linked
# with --gc-sections keeps only the kernels it calls.
NPURT_LIB_SRCS = $(filter-out rt/fw_% %_main.c,$(wildcard rt/*.c)) $(wildcard kernels/*.c)
RV32_AR     = riscv64-unknown-elf-ar
RV32_CFLAGS = --specs=picolibc.specs -Os -g -std=c11 -Wall -Wextra -Werror -ffreestanding \
              -ffunction-sections -fdata-sections -I. -MMD -MP
rv32_march = $(word 1,$(subst -, ,$(1)))
rv32_mabi  = $(word 2,$(subst -, ,$(1)))
RV32_LIBS  = $(NPURT_RV32_VARIANTS:%=$(BUILD)/rv32/%/libnpurt.a)

define rv32_variant
$(BUILD)/rv32/$(1)/obj/%.o: %.c
	@mkdir -p $$(dir $$@)
	$(FW_CC) $(RV32_CFLAGS) -march=$(call rv32_march,$(1)) -mabi=$(call rv32_mabi,$(1)) -c $$< -o $$@
$(BUILD)/rv32/$(1)/libnpurt.a: $(NPURT_LIB_SRCS:%.c=$(BUILD)/rv32/$(1)/obj/%.o)
	@rm -f $$@
	$(RV32_AR) rcs $$@ $$^
endef
$(foreach v,$(NPURT_RV32_VARIANTS),$(eval $(call rv32_variant,$(v))))
-include $(shell find $(BUILD)/rv32 -name '*.d' 2>/dev/null)

.PHONY: rv32-libs install uninstall
rv32-libs: $(RV32_LIBS)

# ---- generated package files ----------------------------------------------------
# pkg-config and CMake files find the prefix from their own place, so an
# installed tree (or a DESTDIR image) can move. The rv32 files carry the ABI
# (-march, -mabi); the C library is the toolchain's choice: the builds are
# against picolibc, whose --specs=picolibc.specs the firmware's own flags
# (or the variable `specs`, or the CMake toolchain file) give, once: gcc
# refuses the specs file twice in one command.
$(BUILD)/pkg/npurt.pc: mk/install.mk
	@mkdir -p $(dir $@)
	printf '%s\n' 'prefix=$${pcfiledir}/../..' 'libdir=$${prefix}/lib' 'includedir=$${prefix}/include' \
	  'datadir=$${prefix}/share/npucc' 'riscv32_variants=$(NPURT_RV32_VARIANTS)' \
	  'riscv32_libdir=$${libdir}/riscv32' '' 'Name: npurt' \
	  'Description: npucc on-device runtime (host build; npurt-<march>-<mabi> for rv32)' \
	  'Version: $(NPUCC_VERSION)' 'Cflags: -I$${includedir}' 'Libs: -L$${libdir} -lnpurt -lm' >$@
$(BUILD)/pkg/npurt-%.pc: mk/install.mk
	@mkdir -p $(dir $@)
	printf '%s\n' 'prefix=$${pcfiledir}/../..' 'libdir=$${prefix}/lib/riscv32/$*' 'includedir=$${prefix}/include' \
	  'march=$(call rv32_march,$*)' 'mabi=$(call rv32_mabi,$*)' 'cc=$(FW_CC)' 'specs=--specs=picolibc.specs' '' \
	  'Name: npurt-$*' 'Description: npucc on-device runtime for $(call rv32_march,$*)/$(call rv32_mabi,$*), picolibc' \
	  'Version: $(NPUCC_VERSION)' \
	  'Cflags: -I$${includedir} -march=$${march} -mabi=$${mabi}' \
	  'Libs: -march=$${march} -mabi=$${mabi} -Wl,--gc-sections -L$${libdir} -lnpurt -lm' >$@
$(BUILD)/pkg/npurtConfig.cmake: mk/npurtConfig.cmake.in mk/install.mk
	@mkdir -p $(dir $@)
	sed -e 's|@VARIANTS@|$(NPURT_RV32_VARIANTS)|' -e 's|@VERSION@|$(NPUCC_VERSION)|' $< >$@
$(BUILD)/pkg/npurtConfigVersion.cmake: mk/npurtConfigVersion.cmake.in mk/install.mk
	@mkdir -p $(dir $@)
	sed -e 's|@VERSION@|$(NPUCC_VERSION)|' $< >$@

PKG_FILES = $(BUILD)/pkg/npurt.pc $(NPURT_RV32_VARIANTS:%=$(BUILD)/pkg/npurt-%.pc) \
            $(BUILD)/pkg/npurtConfig.cmake $(BUILD)/pkg/npurtConfigVersion.cmake
INSTALL_TOOLS = $(MAN_TOOLS:%=$(BUILD)/%)

# ---- install ----------------------------------------------------------------------
I = $(DESTDIR)$(PREFIX)
INSTALLED = $(MAN_TOOLS:%=$(I)/bin/%) \
            $(patsubst %,$(I)/share/npucc/%,$(wildcard targets/*.yaml isa/*.yaml) fw/npurt.elf) \
            $(patsubst rt/%,$(I)/include/npurt/%,$(NPURT_PUBLIC_HEADERS)) \
            $(I)/lib/libnpurt.a $(NPURT_RV32_VARIANTS:%=$(I)/lib/riscv32/%/libnpurt.a) \
            $(I)/lib/pkgconfig/npurt.pc $(NPURT_RV32_VARIANTS:%=$(I)/lib/pkgconfig/npurt-%.pc) \
            $(patsubst %,$(I)/lib/cmake/npurt/%,npurtConfig.cmake npurtConfigVersion.cmake \
              npurt-riscv32-toolchain.cmake) \
            $(MAN_TOOLS:%=$(I)/share/man/man1/%.1)
# the directories that are the package's own (uninstall removes them when empty)
OWN_DIRS = $(I)/share/npucc/targets $(I)/share/npucc/isa $(I)/share/npucc/fw $(I)/share/npucc \
           $(I)/include/npurt $(NPURT_RV32_VARIANTS:%=$(I)/lib/riscv32/%) $(I)/lib/riscv32 $(I)/lib/cmake/npurt

install: $(INSTALL_TOOLS) $(FW_ELF) $(LIBNPURT) $(RV32_LIBS) $(PKG_FILES) man
	@case "$(PREFIX)" in /*) ;; *) echo "install: PREFIX must be an absolute path, got '$(PREFIX)'" >&2; exit 2;; esac
	install -d $(I)/bin $(I)/share/npucc/targets $(I)/share/npucc/isa $(I)/share/npucc/fw $(I)/include/npurt \
	  $(I)/lib/pkgconfig $(I)/lib/cmake/npurt $(I)/share/man/man1 $(NPURT_RV32_VARIANTS:%=$(I)/lib/riscv32/%)
	install -m 755 $(INSTALL_TOOLS) $(I)/bin/
	install -m 644 targets/*.yaml $(I)/share/npucc/targets/
	install -m 644 isa/*.yaml $(I)/share/npucc/isa/
	install -m 644 $(FW_ELF) $(I)/share/npucc/fw/npurt.elf
	for h in $(NPURT_PUBLIC_HEADERS); do \
	  sed 's|^\([[:space:]]*#[[:space:]]*include[[:space:]]*\)"rt/\([^"/]*\)"|\1"\2"|' $$h \
	    >$(I)/include/npurt/$${h#rt/} && chmod 644 $(I)/include/npurt/$${h#rt/} || exit 1; done
	install -m 644 $(LIBNPURT) $(I)/lib/libnpurt.a
	for v in $(NPURT_RV32_VARIANTS); do install -m 644 $(BUILD)/rv32/$$v/libnpurt.a $(I)/lib/riscv32/$$v/ || exit 1; done
	install -m 644 $(filter %.pc,$(PKG_FILES)) $(I)/lib/pkgconfig/
	install -m 644 $(filter %.cmake,$(PKG_FILES)) mk/npurt-riscv32-toolchain.cmake $(I)/lib/cmake/npurt/
	install -m 644 $(MAN_TOOLS:%=$(BUILD)/man/%.1) $(I)/share/man/man1/

uninstall:
	rm -f $(INSTALLED)
	-rmdir $(OWN_DIRS) 2>/dev/null; true
