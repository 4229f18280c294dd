"""_cli.py -- the `veloxquant` console script: runs the bundled CLI."""
import os
import sys


def main():
    from .evaluate import cli_path
    path = cli_path()
    os.execv(path, [path] + sys.argv[1:])
