"""The front end as a user meets it: --version, and the bash completion script it generates
(loaded into a real bash, asked what it completes)."""
import subprocess

from conftest import PROSPER, ROOT, prosper


def test_version_is_the_version_file():
    with open(f"{ROOT}/VERSION") as f:
        want = f.read().strip()
    r = prosper("--version")
    assert r.returncode == 0 and r.stdout == f"prosper {want}\n", r


def complete(script, words):
    """What bash's completion function offers for the command line `words` (the last word is
    the one being completed)."""
    line = " ".join(f"'{w}'" for w in words)
    prog = (f"{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _prosper; "
            "printf '%s\\n' \"${COMPREPLY[@]}\"")
    r = subprocess.run(["bash", "--norc", "-c", prog], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_bash_completion_offers_subcommands_and_their_real_options():
    r = prosper("completion", "bash")
    assert r.returncode == 0, r.stderr
    script = r.stdout
    assert complete(script, ["prosper", "re"]) == ["resume"]
    assert set(complete(script, ["prosper", ""])) >= {"run", "resume", "torture", "inspect", "sim", "eval",
                                                      "completion", "--version"}
    # a C subcommand's options come from its --help, a Python one's from its parser
    assert complete(script, ["prosper", "run", "--dur"]) == ["--durable-every"]
    assert complete(script, ["prosper", "torture", "--power"]) == ["--power-cut"]
    assert "--no-such" not in complete(script, ["prosper", "inspect", "--"])
    # after `--` the words are the program's: nothing is offered
    assert complete(script, ["prosper", "run", "--", "--dur"]) == []


def test_every_subcommand_help_gives_an_example_of_itself():
    with open(f"{ROOT}/python/prosper/subcommands.tsv") as f:
        names = [line.split("\t")[0] for line in f if line.strip() and not line.startswith("#")]
    assert "run" in names and "completion" in names
    for name in names:
        r = prosper(name, "--help")
        assert r.returncode == 0, (name, r.stderr)
        text = r.stdout.split("example:\n", 1)
        assert len(text) == 2, f"prosper {name} --help shows no example"
        assert f"prosper {name} " in text[1], (name, text[1])


def test_unknown_shell_is_a_usage_error():
    r = prosper("completion", "zsh")
    assert r.returncode == 2 and "invalid choice" in r.stderr
