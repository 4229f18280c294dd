# packaging.mk -- the public headers' self-containment test (included by
# the Makefile). Owner: packaging (docs/packaging.md).

.PHONY: test-headers
# Each include/*.h compiles alone as C11 and C++11; version in one place.
test-headers:
	bash tests/pkg/test_headers.sh $(BUILD)
