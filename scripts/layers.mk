# layers.mk -- `make check-layers`: the layer rule on every quoted #include
# (scripts/check_layers.py, after its self-test); the test targets run it first.
.PHONY: check-layers
check-layers:
	python3 scripts/check_layers.py --self-test
	python3 scripts/check_layers.py
test test-quick test-unit: check-layers
