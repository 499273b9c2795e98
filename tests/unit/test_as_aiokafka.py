"""The opt-in alias: ``import aiokafka`` resolves to aiokafka_lead after install(), and only
then. Each case runs in a fresh interpreter: the alias changes the process's imports."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run(code: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, *args, "-c", textwrap.dedent(code)] if not args else [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_without_install_aiokafka_is_the_real_one() -> None:
    out = run("import aiokafka; print(aiokafka.__name__, hasattr(aiokafka, 'AIOKafkaClient'))")
    assert out == "aiokafka True"


def test_install_makes_aiokafka_and_its_submodules_ours() -> None:
    out = run(
        """
        import aiokafka_lead.as_aiokafka as alias
        alias.install()
        import aiokafka, aiokafka_lead
        import aiokafka.producer.producer as pp
        from aiokafka.structs import TopicPartition
        from aiokafka.errors import KafkaError
        print(aiokafka is aiokafka_lead, pp.__name__, aiokafka_lead.__spec__.name,
              TopicPartition is aiokafka_lead.TopicPartition, KafkaError.__module__)
        """
    )
    assert out == "True aiokafka_lead.producer.producer aiokafka_lead True aiokafka_lead._errors_base"


def test_a_submodule_we_lack_is_a_clear_module_not_found() -> None:
    out = run(
        """
        import aiokafka_lead.as_aiokafka as alias
        alias.install()
        try:
            import aiokafka.conn
        except ModuleNotFoundError as exc:
            print(exc.name, "|", exc)
        """
    )
    assert out.startswith("aiokafka.conn | No module named 'aiokafka.conn'")
    assert "aiokafka_lead.conn" in out


def test_install_after_the_real_aiokafka_was_imported_is_refused() -> None:
    out = run(
        """
        import aiokafka
        import aiokafka_lead.as_aiokafka as alias
        try:
            alias.install()
        except RuntimeError as exc:
            print(exc)
        print(alias.installed())
        """
    )
    assert "the real aiokafka is already imported (aiokafka" in out
    assert out.endswith("False")


def test_uninstall_gives_the_real_aiokafka_back() -> None:
    out = run(
        """
        import aiokafka_lead.as_aiokafka as alias
        alias.install()
        import aiokafka
        first = aiokafka.__name__
        alias.uninstall()
        import aiokafka
        print(first, aiokafka.__name__, alias.installed())
        """
    )
    assert out == "aiokafka_lead aiokafka False"


def test_as_a_program_it_runs_a_module_with_the_alias(tmp_path: object) -> None:
    out = run("", "-m", "aiokafka_lead.as_aiokafka", "-m", "json.tool", "--help")
    assert "usage" in out
    script = f"{tmp_path}/s.py"
    with open(script, "w", encoding="utf-8") as f:
        f.write("import sys, aiokafka; print(aiokafka.__name__, sys.argv[1:])\n")
    assert run("", "-m", "aiokafka_lead.as_aiokafka", script, "a", "b") == "aiokafka_lead ['a', 'b']"
