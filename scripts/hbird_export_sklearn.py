#!/usr/bin/python3
"""The scikit-learn exporter's command line, kept under its old name.

The exporter lives in the Python package (python/hbird/export_sklearn.py);
this file runs it without installing the package and lets scripts that put
scripts/ on sys.path keep writing `from hbird_export_sklearn import export`.

    hbird_export_sklearn.py model.pkl --columns age,city,review > model.json
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from hbird.export_sklearn import Exporter, TextRef, Unsupported, export, main  # noqa: E402

__all__ = ["Exporter", "TextRef", "Unsupported", "export", "main"]

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
