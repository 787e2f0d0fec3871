#!/usr/bin/python3
"""The tuning table's edges from the outside (issue 25 items 7 and 8), on
the emulator, through convjit-tune and convjit-run:

  - --import validates every field: a NUL inside a text field (problem,
    arch, device, versions, a knob's name or value) or a value of the wrong
    kind is reported and skipped, never written (a NUL would have cut the
    problem text short of what the row claims, and the shorter text still
    parses);
  - a `tuning` table of another schema in the database is moved aside
    (renamed, its rows kept) and recreated, logged; the winners are stored
    and a later plan of the shape uses them; the tool says how many winners
    it stored, and a store that did not happen (a view named tuning, which
    cannot be renamed) fails the run with the reason.

usage: test_tune_db.py CONVJIT_TUNE CONVJIT_RUN WORK_DIR
(registered by tests/tune.cmake as ctest tools/tune_db_edges). stdlib only.
"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys

TUNE, RUN, WORK = sys.argv[1:4]
SHAPE = "conv - bf16 1,32,1,8,8,64,1,1,1"
RUN_SHAPE = ["--shape", "1,32,1,8,8,64,1,1,1"]


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def tool(args, rc=0, env=None, exe=TUNE):
    p = subprocess.run([exe] + args, capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, **(env or {})))
    if rc is not None and p.returncode != rc:
        raise AssertionError("%s %s: exit %d, expected %d\nstdout: %s\nstderr: %s"
                             % (os.path.basename(exe), " ".join(args), p.returncode, rc, p.stdout[-2000:],
                                p.stderr[-2000:]))
    return p.stdout, p.stderr


def fresh(name):
    d = os.path.join(WORK, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d, mode=0o700)
    return d


def count(d):
    out, _ = tool(["--cache-dir", d, "--count"])
    return int(out.strip())


def test_import_validates_fields(good):
    """One good row, and copies of it each with one bad field: only the
    good one is written; each bad one is reported by field and skipped."""
    row = good["rows"][0]

    def with_(path, value):
        r = json.loads(json.dumps(row))
        obj = r
        for k in path[:-1]:
            obj = obj[k]
        obj[path[-1]] = value
        return r

    knobs = row["knobs"]
    bad = [(("problem",), row["problem"] + "\u0000junk", "problem"),
           (("problem",), row["problem"].replace(" c=", "\u0000 c=", 1), "problem"),
           (("arch",), row["arch"] + "\u0000", "arch"),
           (("device",), row["device"] + "\u0000x", "device"),
           (("convjit",), row["convjit"] + "\u0000", "convjit"),
           (("knobs", "tile"), knobs["tile"] + "\u0000", "knobs"),
           (("modelled",), 7, "modelled"),
           (("modelled",), "yes", "modelled"),
           (("created",), "yesterday", "created")]
    rows = [with_(p, v) for p, v, _ in bad]
    r = json.loads(json.dumps(row))
    r["knobs"] = {("tile\u0000x" if k == "tile" else k): v for k, v in knobs.items()}
    rows.append(r)
    bad.append((None, None, "knobs"))
    for i, r in enumerate(rows):
        d = fresh("import%d" % i)
        f = os.path.join(d, "in.json")
        with open(f, "w") as fh:
            json.dump({"format": good["format"], "rows": [r]}, fh)
        _, err = tool(["--cache-dir", d, "--import", f])
        field = bad[i][2]
        check("imported 0 rows, skipped 1" in err, "bad %s: %r" % (field, err))
        check("row 0: %s" % field in err, "bad %s: the report does not name the field: %r" % (field, err))
        check(count(d) == 0, "bad %s: a row was written" % field)
    # all of them with the good row: one transaction writes the good one only
    d = fresh("import_all")
    f = os.path.join(d, "in.json")
    with open(f, "w") as fh:
        json.dump({"format": good["format"], "rows": rows + [row]}, fh)
    _, err = tool(["--cache-dir", d, "--import", f])
    check("imported 1 rows, skipped %d" % len(rows) in err, err)
    out = os.path.join(d, "out.json")
    tool(["--cache-dir", d, "--export", out])
    with open(out) as fh:
        back = json.load(fh)["rows"]
    check(len(back) == 1 and back[0]["problem"] == row["problem"] and back[0]["device"] == row["device"],
          "the exported row is not the good one: %r" % back)


def test_foreign_tuning_table():
    d = fresh("foreign")
    count(d)  # creates the database
    db = os.path.join(d, "kernels.sqlite3")
    c = sqlite3.connect(db)
    c.execute("CREATE TABLE tuning(id INTEGER PRIMARY KEY, note TEXT)")
    c.execute("INSERT INTO tuning(note) VALUES ('someone else''s row')")
    c.commit()
    c.close()
    shapes = os.path.join(d, "shapes.txt")
    with open(shapes, "w") as fh:
        fh.write(SHAPE + "\n")
    out, err = tool(["--device", "emu", "--shapes", shapes, "--cache-dir", d, "--store-modelled"],
                    env={"CONVJIT_LOG": "error"})
    print(out, err, sep="\n")
    check("another schema" in err and "tuning" in err, "no log line for the foreign table: %r" % err)
    check("stored 1 of 1" in out, "the table does not say what was stored: %r" % out)
    check(count(d) == 1, "the winner was not stored")
    c = sqlite3.connect(db)
    names = [r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'tuning%'")]
    moved = [n for n in names if n != "tuning"]
    check(len(moved) == 1, "the foreign table was not kept under another name: %r" % names)
    check([r[0] for r in c.execute('SELECT note FROM "%s"' % moved[0])] == ["someone else's row"],
          "the foreign table's rows were not kept")
    c.close()
    # a later plan of the shape is the tuned one
    _, err = tool(["--device", "emu"] + RUN_SHAPE, exe=RUN, env={"CONVJIT_LOG": "info", "CONVJIT_CACHE_DIR": d})
    check("tuning table winner" in err, "the later plan did not use the stored winner: %r" % err[-3000:])
    # a store that cannot happen is said, and fails the run: a view named
    # tuning cannot be renamed aside (nothing of someone else's is dropped)
    d2 = fresh("foreign_view")
    count(d2)
    c = sqlite3.connect(os.path.join(d2, "kernels.sqlite3"))
    c.execute("CREATE VIEW tuning AS SELECT 1 AS one")
    c.commit()
    c.close()
    out, err = tool(["--device", "emu", "--shapes", shapes, "--cache-dir", d2, "--store-modelled"], rc=1)
    check("stored 0 of 1" in out and "not stored" in err and "tuning" in err,
          "a failed store is not said: %r %r" % (out, err))
    # --no-store and no --store-modelled: nothing stored, and said so
    out, _ = tool(["--device", "emu", "--shapes", shapes, "--cache-dir", d])
    check("nothing stored" in out, out)


def main():
    os.makedirs(WORK, exist_ok=True)
    d = fresh("source")
    shapes = os.path.join(d, "shapes.txt")
    with open(shapes, "w") as fh:
        fh.write(SHAPE + "\n")
    tool(["--device", "emu", "--shapes", shapes, "--cache-dir", d, "--store-modelled"])
    exp = os.path.join(d, "e.json")
    tool(["--cache-dir", d, "--export", exp])
    with open(exp) as fh:
        good = json.load(fh)
    check(len(good["rows"]) == 1, "setup: the source table has %d rows" % len(good["rows"]))
    failed = 0
    for name, t in (("test_import_validates_fields", lambda: test_import_validates_fields(good)),
                    ("test_foreign_tuning_table", test_foreign_tuning_table)):
        try:
            t()
            print("PASS", name)
        except (AssertionError, KeyError, ValueError, subprocess.TimeoutExpired) as e:
            failed += 1
            print("FAIL", name + ":", e)
    if not failed:
        shutil.rmtree(WORK, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
