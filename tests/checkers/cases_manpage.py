"""check_manpage.py (manpage.bats): a made-up --help and man page, good, then one break per
promise."""
CHECKER = "check_manpage.py"
SUBS = ["list", "check", "recover", "merge", "report"]


def options_texts(n=32):
    names = ["--opt%s" % chr(ord("a") + i) if i < 26 else "--opt-z%s" % chr(ord("a") + i - 26)
             for i in range(n)]
    help_lines = ["usage: spyre-bpftrace [OPTIONS]", ""]
    page = ["NAME", "x", "OPTIONS"]
    for i, name in enumerate(names):
        label = ("-%s, %s N" % (chr(ord("A") + i), name)) if i < 26 else "    %s N" % name
        text = "what %s does, at length" % name
        cont = "and on the next line"
        help_lines.append("  %-23s  %s" % (label, text))
        help_lines.append(" " * 27 + cont)
        page += [label.strip(), text + " " + cont, ""]
    page += ["PROBE TABLE FORMAT", "y"]
    return "\n".join(help_lines) + "\n", "\n".join(page) + "\n"


def sections_files():
    page = ["OPTIONS"]
    helps = {s: ["-h", "--help"] for s in SUBS}
    opts = []
    for sec, takers in (("Tracing", []), ("Fleet mode", []), ("check", ["check"]),
                        ("merge", ["merge"]), ("report", ["report"]),
                        ("All subcommands", SUBS)):
        page += [sec, "The options of %s." % sec, ""]
        for i in range(8):
            name = "--%s-%s" % (sec.split()[0].lower(), chr(ord("a") + i))
            opts.append(name)
            page += [name, "its help"]
            if sec == "Tracing" and i == 0:      # --tracing-a
                page.append("Also for list")
                helps["list"].append(name)
            page.append("")
            for s in takers:
                helps[s].append(name)
    page += ["-h, --help", "help", "", "PROBE TABLE FORMAT"]
    files = {"wide.txt": "\n".join(page) + "\n"}
    files.update({"help-" + s: "\n".join(h) + "\n" for s, h in helps.items()})
    return files


def env_files():
    page = ["ENVIRONMENT", "SPYRE_NO_TAIL_FOLLOW", "Do not follow tail jumps.",
            "SPYRE_NO_UPROBE_MULTI", "Use perf-event uprobes.",
            "For the project's tests only: SPYRE_TEST_HOLD_END and SPYRE_TEST_SKIP_SYS_EXIT.",
            "EXAMPLES"]
    guide = "Set SPYRE_NO_TAIL_FOLLOW=1 to ... SPYRE_TEST_HOLD_END holds.\n"
    src = ('if (env_is_1("SPYRE_NO_UPROBE_MULTI")) x();\n'
           'const char *v = getenv("SPYRE_NO_TAIL_FOLLOW");\n'
           'if (getenv("SPYRE_TEST_SKIP_SYS_EXIT")) y();\n')
    return "\n".join(page) + "\n", guide, src


def cases():
    h, p = options_texts()
    argv = ["options", "@h", "@p"]
    yield "options", argv, {"h": h, "p": p}, None
    yield "options: a help text reworded", argv, {"h": h, "p": p.replace(
        "what --optc does", "what --optc did")}, "the page says otherwise"
    yield "options: an option the page lacks", argv, {"h": h, "p": p.replace(
        "-D, --optd N\n", "")}, "the page says otherwise"
    yield "options: an option --help lacks", argv, {"h": h, "p": p.replace(
        "PROBE TABLE FORMAT", "--extra\nan extra\n\nPROBE TABLE FORMAT")}, "one and not the other"
    h30, p30 = options_texts(29)
    yield "options: too few to be --help's", argv, {"h": h30, "p": p30}, "30 at least"
    yield "options: no OPTIONS section", argv, {"h": h, "p": p.replace("OPTIONS", "OPTS")}, \
        "no OPTIONS"

    files = sections_files()
    d = lambda fs: {"dir/" + k: v for k, v in fs.items()}
    argv = ["sections", "@dir"]
    yield "sections", argv, d(files), None
    bad = dict(files, **{"help-check": files["help-check"] + "--tracing-d\n"})
    yield "sections: a tracing option check takes", argv, d(bad), "place apart"
    bad = dict(files, **{"help-list": files["help-list"].replace("--tracing-a\n", "")})
    yield "sections: the Also for unsaid by list's help", argv, d(bad), "place apart"
    bad = dict(files, **{"wide.txt": files["wide.txt"].replace(
        "--merge-c\nits help\n", "--merge-c\nits help\nTaken by merge\n")})
    yield "sections: a Taken by line", argv, d(bad), "Taken by"
    bad = dict(files, **{"wide.txt": files["wide.txt"].replace(
        "Also for list", "Also for list and tracing")})
    yield "sections: Also for tracing", argv, d(bad), "Also for tracing"
    bad = dict(files, **{"wide.txt": "\n".join(files["wide.txt"].split("\n")[:30]) +
                         "\nPROBE TABLE FORMAT\n"})
    yield "sections: too few options", argv, d(bad), "40 at least"

    page, guide, src = env_files()
    root = {"root/docs/user-guide.md": guide, "root/user/attach/x.c": src}
    argv = ["environment", "@p", "@root"]
    f = lambda pp: dict(root, p=pp)
    yield "environment", argv, f(page), None
    yield "environment: a switch without its entry", argv, f(page.replace(
        "SPYRE_NO_UPROBE_MULTI\nUse perf-event uprobes.\n", "")), "no entry with a description"
    yield "environment: a test knob as a user's switch", argv, f(page.replace(
        "EXAMPLES", "SPYRE_TEST_HOLD_END\nHold the end.\nEXAMPLES")), "tests' paragraph alone"
    yield "environment: a test knob unnamed", argv, f(page.replace(
        " and SPYRE_TEST_SKIP_SYS_EXIT", "")), "tests' paragraph alone"
    yield "environment: an entry the tool does not read", argv, f(page.replace(
        "EXAMPLES", "SPYRE_OLD_SWITCH\nGone.\nEXAMPLES")), "does not read"
    yield "environment: two tests' paragraphs", argv, f(page.replace(
        "EXAMPLES", "For the project's tests only: again.\nEXAMPLES")), "want one"
