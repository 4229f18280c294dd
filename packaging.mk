# packaging.mk -- version, install, test split (included by the Makefile).
# Owner: packaging (docs/packaging.md).
#
#   make install PREFIX=/usr/local [DESTDIR=/stage]
#       libveloxquant.a, libveloxquant.so.X.Y.Z with its soname link
#       libveloxquant.so.X and the dev link libveloxquant.so, the public
#       headers, the CLI, lib/pkgconfig/veloxquant.pc and
#       lib/cmake/veloxquant/veloxquant{Config,ConfigVersion}.cmake
#   make uninstall PREFIX=... [DESTDIR=...]   removes exactly those files
#   make test-unit     every test that needs no downloaded model (no network)
#   make test-models   fetches the default models, runs the tests that need
#                      them and the Python package's suite
#   make test-headers  each public header compiles alone (C11, C++11)
#   make test-install  install into a temporary prefix, build
#                      examples/three_lines.c with pkg-config and with CMake

# The version is written once, in include/veloxquant.h.
VQ_VERSION_MAJOR := $(shell sed -n 's/^\#define VQ_VERSION_MAJOR \([0-9]*\)$$/\1/p' include/veloxquant.h)
VQ_VERSION_MINOR := $(shell sed -n 's/^\#define VQ_VERSION_MINOR \([0-9]*\)$$/\1/p' include/veloxquant.h)
VQ_VERSION_PATCH := $(shell sed -n 's/^\#define VQ_VERSION_PATCH \([0-9]*\)$$/\1/p' include/veloxquant.h)
VQ_VERSION  := $(VQ_VERSION_MAJOR).$(VQ_VERSION_MINOR).$(VQ_VERSION_PATCH)
# the shared library: real file, soname (what programs record), dev link
VQ_REALNAME := libveloxquant.so.$(VQ_VERSION)
VQ_SONAME   := libveloxquant.so.$(VQ_VERSION_MAJOR)

# relinked when the version (or this file) changes, so the real file of the
# current version exists even in a build tree made before
$(SHARED): include/veloxquant.h packaging.mk
# a plain file there is the unversioned library of an older Makefile: relink
ifeq ($(shell test -f $(SHARED) && test ! -L $(SHARED) && echo plain),plain)
.PHONY: $(SHARED)
endif

.PHONY: version
version:
	@echo $(VQ_VERSION)

# ---- install ---------------------------------------------------------------
PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
CMAKEDIR   ?= $(LIBDIR)/cmake/veloxquant
INSTALL    ?= install

# The CUDA part is installed when it was built (`make cuda`).
VQ_INSTALL_CUDA = $(wildcard $(CUDA_LIB))

# relative paths for the CMake config (an installed tree can be moved)
vq_rel = $(shell realpath -m --relative-to='$(1)' '$(2)')
VQ_SUBST = sed -e 's|@VERSION@|$(VQ_VERSION)|g' -e 's|@MAJOR@|$(VQ_VERSION_MAJOR)|g' \
  -e 's|@MINOR@|$(VQ_VERSION_MINOR)|g' -e 's|@PREFIX@|$(PREFIX)|g' \
  -e 's|@LIBDIR@|$(patsubst $(PREFIX)/%,$${exec_prefix}/%,$(LIBDIR))|g' \
  -e 's|@INCLUDEDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))|g' \
  -e 's|@REL_PREFIX@|$(call vq_rel,$(CMAKEDIR),$(PREFIX))|g' \
  -e 's|@REL_LIBDIR@|$(call vq_rel,$(PREFIX),$(LIBDIR))|g' \
  -e 's|@REL_INCLUDEDIR@|$(call vq_rel,$(PREFIX),$(INCLUDEDIR))|g' \
  -e "s|@SIZEOF_VOID_P@|$$(echo | $(CC) -dM -E - | sed -n 's/^\#define __SIZEOF_POINTER__ //p')|g"

.PHONY: install uninstall
install: $(STATIC) $(SHARED) $(CLI)
	$(INSTALL) -d '$(DESTDIR)$(BINDIR)' '$(DESTDIR)$(LIBDIR)' '$(DESTDIR)$(INCLUDEDIR)' \
	  '$(DESTDIR)$(PKGCONFIGDIR)' '$(DESTDIR)$(CMAKEDIR)'
	$(INSTALL) -m 755 $(CLI) '$(DESTDIR)$(BINDIR)/veloxquant'
	$(INSTALL) -m 644 $(STATIC) '$(DESTDIR)$(LIBDIR)/libveloxquant.a'
	$(INSTALL) -m 755 $(BUILD)/$(VQ_REALNAME) '$(DESTDIR)$(LIBDIR)/$(VQ_REALNAME)'
	ln -sf $(VQ_REALNAME) '$(DESTDIR)$(LIBDIR)/$(VQ_SONAME)'
	ln -sf $(VQ_SONAME) '$(DESTDIR)$(LIBDIR)/libveloxquant.so'
	$(INSTALL) -m 644 include/veloxquant.h '$(DESTDIR)$(INCLUDEDIR)/veloxquant.h'
	$(if $(VQ_INSTALL_CUDA),$(INSTALL) -m 644 include/veloxquant_cuda.h '$(DESTDIR)$(INCLUDEDIR)/veloxquant_cuda.h')
	$(if $(VQ_INSTALL_CUDA),$(INSTALL) -m 644 $(CUDA_LIB) '$(DESTDIR)$(LIBDIR)/libveloxquant_cuda.a')
	$(VQ_SUBST) cmake/veloxquant.pc.in >'$(DESTDIR)$(PKGCONFIGDIR)/veloxquant.pc'
	$(VQ_SUBST) cmake/veloxquantConfig.cmake.in >'$(DESTDIR)$(CMAKEDIR)/veloxquantConfig.cmake'
	$(VQ_SUBST) cmake/veloxquantConfigVersion.cmake.in >'$(DESTDIR)$(CMAKEDIR)/veloxquantConfigVersion.cmake'

uninstall:
	rm -f '$(DESTDIR)$(BINDIR)/veloxquant' '$(DESTDIR)$(LIBDIR)/libveloxquant.a' \
	  '$(DESTDIR)$(LIBDIR)/$(VQ_REALNAME)' '$(DESTDIR)$(LIBDIR)/$(VQ_SONAME)' \
	  '$(DESTDIR)$(LIBDIR)/libveloxquant.so' '$(DESTDIR)$(LIBDIR)/libveloxquant_cuda.a' \
	  '$(DESTDIR)$(INCLUDEDIR)/veloxquant.h' '$(DESTDIR)$(INCLUDEDIR)/veloxquant_cuda.h' \
	  '$(DESTDIR)$(PKGCONFIGDIR)/veloxquant.pc' \
	  '$(DESTDIR)$(CMAKEDIR)/veloxquantConfig.cmake' '$(DESTDIR)$(CMAKEDIR)/veloxquantConfigVersion.cmake'
	-rmdir '$(DESTDIR)$(CMAKEDIR)' 2>/dev/null

# ---- tests -----------------------------------------------------------------
.PHONY: test-headers test-install
# Each include/*.h compiles alone as C11 and C++11; version in one place.
test-headers:
	bash tests/pkg/test_headers.sh $(BUILD)

# Install into $(BUILD)/tmp and build examples/three_lines.c against it.
test-install: $(STATIC) $(SHARED) $(CLI)
	VQ_BUILD=$(BUILD) bash tests/pkg/test_install.sh $(BUILD)

.PHONY: test-unit test-models
# No network, no downloaded model: the unit tests and fuzz-corpus replays
# (tests/run.sh with VQ_TEST_SET=unit), the header and install tests.
test-unit: all tests
	VQ_TEST_SET=unit VQ_BUILD=$(BUILD) bash tests/run.sh $(BUILD)
	$(MAKE) test-headers test-install

# The default models (fetched, sha256-pinned), the tests that load them, and
# the Python package's suite (python/python.mk adds test-python here).
test-models: all tests models
	VQ_TEST_SET=models VQ_BUILD=$(BUILD) bash tests/run.sh $(BUILD)
