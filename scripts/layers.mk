# layers.mk -- `make check-layers`: the layer rule on every quoted #include
# (scripts/check_layers.py); the test targets run it first.
.PHONY: check-layers
check-layers:
	python3 scripts/check_layers.py
test test-quick: check-layers
