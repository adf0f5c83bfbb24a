#!/usr/bin/python3
"""Parse a metrics document with the reference parser of the Prometheus
Python client (Debian: python3-prometheus-client) and print what it read,
for tests/test_openmetrics.c to assert on:

    F <TAB> family <TAB> type <TAB> unit <TAB> help
    S <TAB> family <TAB> sample name <TAB> labels <TAB> value

labels sorted by name as k="v" joined by ",", values escaped as in the
exposition format (backslash, double quote, newline); values as integers
when whole.  Usage: metrics_parse.py openmetrics|prometheus FILE.
Exit 1 with the parser's complaint on stderr when it refuses the document.
"""
import math
import sys


def esc(v):
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def num(v):
    if math.isfinite(v) and v == int(v) and abs(v) < 2**63:
        return str(int(v))
    return repr(v)


def main():
    fmt, path = sys.argv[1], sys.argv[2]
    if fmt == "openmetrics":
        from prometheus_client.openmetrics.parser import text_string_to_metric_families
    elif fmt == "prometheus":
        from prometheus_client.parser import text_string_to_metric_families
    else:
        sys.exit("metrics_parse.py: format openmetrics or prometheus, not " + fmt)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    out = []
    try:
        for fam in text_string_to_metric_families(text):
            out.append("F\t%s\t%s\t%s\t%s" % (fam.name, fam.type, getattr(fam, "unit", ""),
                                              esc(fam.documentation)))
            for s in fam.samples:
                labels = ",".join('%s="%s"' % (k, esc(s.labels[k])) for k in sorted(s.labels))
                out.append("S\t%s\t%s\t%s\t%s" % (fam.name, s.name, labels, num(s.value)))
    except Exception as e:  # the parsers raise ValueError and others
        sys.exit("metrics_parse.py: %s: %s: %s" % (path, type(e).__name__, e))
    print("\n".join(out))


main()
