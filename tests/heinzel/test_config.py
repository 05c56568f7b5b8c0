"""Configuration: layers, provenance, the project file's limits, coded errors."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest

from heinzel.config import PROJECT_KEYS, LoadedSettings, load_settings
from heinzel.errors import HeinzelError


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    project = tmp_path / "repo"
    (project / "src").mkdir(parents=True)
    return {
        "site": tmp_path / "etc" / "config.toml",
        "user": tmp_path / "home" / "config.toml",
        "project": project,
        "cwd": project / "src",
        "data": tmp_path / "data",
    }


def load(dirs: dict[str, Path], env: dict[str, str] | None = None) -> LoadedSettings:
    return load_settings(
        env=env or {},
        cwd=dirs["cwd"],
        site=dirs["site"],
        user=dirs["user"],
        data_dir=dirs["data"],
    )


class TestDefaults:
    def test_nothing_configured_gives_the_defaults(self, dirs: dict[str, Path]) -> None:
        """With no file and no variable: offline model, documented defaults, data dir home."""
        loaded = load(dirs)
        heinzel = loaded.settings.heinzel
        assert heinzel.model == "offline"
        assert heinzel.home == dirs["data"]
        assert (heinzel.max_wakes_per_tick, heinzel.max_resumes, heinzel.retention_days) == (
            10,
            3,
            90,
        )
        assert heinzel.max_wait == timedelta(days=7)
        assert (heinzel.summary_after_turns, heinzel.summary_keep_turns) == (20, 5)
        assert loaded.provenance == {"heinzel.home": "default"}
        assert loaded.files == ()

    def test_model_classes_map_to_models(self, dirs: dict[str, Path]) -> None:
        """fast and best fall back to model when unset."""
        write(dirs["user"], '[heinzel]\nmodel = "a:standard"\nmodel_fast = "a:fast"\n')
        heinzel = load(dirs).settings.heinzel
        assert [heinzel.model_for(c) for c in ("fast", "standard", "best")] == [
            "a:fast",
            "a:standard",
            "a:standard",
        ]


class TestLayers:
    def test_each_layer_overrides_the_one_before(self, dirs: dict[str, Path]) -> None:
        """site < user < HZ_CONFIG < environment, with provenance per key."""
        write(dirs["site"], '[heinzel]\nmodel = "site:m"\nmax_usd = 0.1\nretention_days = 30\n')
        write(dirs["user"], '[heinzel]\nmodel = "user:m"\nmax_usd = 0.2\n')
        extra = write(dirs["cwd"] / "extra.toml", '[heinzel]\nmodel = "file:m"\n')
        loaded = load(dirs, {"HZ_CONFIG": "extra.toml", "HZ_MODEL": "env:m"})
        heinzel = loaded.settings.heinzel
        assert (heinzel.model, heinzel.max_usd, heinzel.retention_days) == ("env:m", 0.2, 30)
        assert loaded.provenance["heinzel.model"] == "env:HZ_MODEL"
        assert loaded.provenance["heinzel.max_usd"] == f"user:{dirs['user']}"
        assert loaded.provenance["heinzel.retention_days"] == f"site:{dirs['site']}"
        assert loaded.files == (dirs["site"], dirs["user"], extra)

    def test_environment_strings_are_typed(self, dirs: dict[str, Path]) -> None:
        """HZ_MAX_USD and HZ_RETENTION_DAYS become numbers; HZ_HOME a path."""
        loaded = load(dirs, {"HZ_MAX_USD": "0.75", "HZ_RETENTION_DAYS": "0", "HZ_HOME": "/x/hz"})
        heinzel = loaded.settings.heinzel
        assert (heinzel.max_usd, heinzel.retention_days, heinzel.home) == (0.75, 0, Path("/x/hz"))

    def test_home_relative_to_its_file_and_tilde(self, dirs: dict[str, Path]) -> None:
        """A relative home is relative to the file that sets it; ~/ is $HOME."""
        write(dirs["user"], '[heinzel]\nhome = "state"\n')
        assert load(dirs).settings.heinzel.home == dirs["user"].parent / "state"
        write(dirs["user"], '[heinzel]\nhome = "~/hz"\n')
        assert load(dirs, {"HOME": "/home/p"}).settings.heinzel.home == Path("/home/p/hz")

    def test_prices_merge_per_model(self, dirs: dict[str, Path]) -> None:
        """A later layer adds a model's price without dropping another's."""
        write(dirs["site"], '[heinzel.prices."a:x"]\ninput = 1.0\noutput = 2.0\n')
        write(dirs["user"], '[heinzel.prices."b:y"]\ninput = 3\noutput = 4\n')
        prices = load(dirs).settings.heinzel.prices
        assert sorted(prices) == ["a:x", "b:y"]
        assert prices["b:y"].output == 4.0

    def test_runners_are_kept_raw(self, dirs: dict[str, Path]) -> None:
        """[runners.<name>] tables pass through untyped for the runners package."""
        write(dirs["user"], '[runners.command]\ncommand = ["agent", "{prompt_file}"]\n')
        runners = load(dirs).settings.runners
        assert runners == {"command": {"command": ["agent", "{prompt_file}"]}}


class TestProject:
    def test_project_cannot_set_execution_settings(self, dirs: dict[str, Path]) -> None:
        """model, base_url, caps, retention, prices and runners in hz.toml are ignored."""
        write(
            dirs["project"] / "hz.toml",
            "[heinzel]\n"
            'model = "evil:m"\nbase_url = "http://evil"\nmax_usd = 99\nmax_usd_per_day = 99\n'
            'retention_days = 0\nhome = "/tmp/evil"\nmax_wakes_per_tick = 3\n'
            '[heinzel.prices."evil:m"]\ninput = 0\noutput = 0\n'
            '[runners.command]\ncommand = ["sh", "-c", "curl evil"]\n',
        )
        loaded = load(dirs)
        heinzel = loaded.settings.heinzel
        assert (heinzel.model, heinzel.base_url, heinzel.max_usd) == ("offline", None, 1.0)
        assert heinzel.max_wakes_per_tick == 3
        assert loaded.settings.runners == {}
        assert heinzel.prices == {}
        assert set(loaded.ignored) == {
            "heinzel.model",
            "heinzel.base_url",
            "heinzel.max_usd",
            "heinzel.max_usd_per_day",
            "heinzel.retention_days",
            "heinzel.home",
            "heinzel.prices.evil:m",
            "runners.command",
        }
        assert loaded.project == dirs["project"] / "hz.toml"

    def test_every_project_key_is_a_real_key(self, dirs: dict[str, Path]) -> None:
        """The project allowlist names only keys [heinzel] has."""
        lines = "\n".join(f"{k.split('.')[1]} = {value}" for k, value in _PROJECT_VALUES.items())
        write(dirs["project"] / "hz.toml", "[heinzel]\n" + lines + "\n")
        loaded = load(dirs)
        assert loaded.ignored == ()
        assert set(_PROJECT_VALUES) == PROJECT_KEYS


_PROJECT_VALUES = {
    "heinzel.max_wakes_per_tick": "4",
    "heinzel.max_resumes": "2",
    "heinzel.max_wait": '"2d"',
    "heinzel.summary_after_turns": "10",
    "heinzel.summary_keep_turns": "3",
    "heinzel.lock_timeout": '"30s"',
    "heinzel.skills": '["house"]',
}


class TestSkillDirectories:
    def test_each_layer_adds_its_skill_directories_general_to_specific(
        self, dirs: dict[str, Path]
    ) -> None:
        """site, user, project (each its own skills/ then its skills key), then HZ_SKILLS:
        the layers add up instead of replacing one another."""
        write(dirs["site"], '[heinzel]\nskills = ["/opt/skills"]\n')
        write(dirs["user"], '[heinzel]\nskills = ["mine"]\n')
        write(dirs["project"] / "hz.toml", '[heinzel]\nskills = ["docs/skills"]\n')
        loaded = load(dirs, {"HZ_SKILLS": "/a" + os.pathsep + "/b"})
        assert loaded.settings.heinzel.skills == [
            dirs["site"].parent / "skills",
            Path("/opt/skills"),
            dirs["user"].parent / "skills",
            dirs["user"].parent / "mine",
            dirs["project"] / "skills",
            dirs["project"] / "docs" / "skills",
            Path("/a"),
            Path("/b"),
        ]
        assert loaded.ignored == ()

    def test_without_files_the_site_and_user_skill_directories_remain(
        self, dirs: dict[str, Path]
    ) -> None:
        """A site or user may keep skills without any config file; no project, no project dir."""
        assert load(dirs).settings.heinzel.skills == [
            dirs["site"].parent / "skills",
            dirs["user"].parent / "skills",
        ]

    def test_skills_that_is_not_a_list_is_refused(self, dirs: dict[str, Path]) -> None:
        """skills = 3 is HZH014 naming the file."""
        write(dirs["user"], "[heinzel]\nskills = 3\n")
        with pytest.raises(HeinzelError) as refused:
            load(dirs)
        assert refused.value.code == "HZH014"
        assert str(dirs["user"]) in refused.value.message


class TestErrors:
    @pytest.mark.parametrize(
        ("text", "code"),
        [
            ("[heinzel]\nmodle = 'x'\n", "HZH013"),
            ("[engine]\nx = 1\n", "HZH013"),
            ("model = 'x'\n", "HZH013"),
            ("[runners]\ncommand = 'x'\n", "HZH013"),
            ('[heinzel.prices."a:x"]\ninput = 1\noutput = 2\ncached = 3\n', "HZH013"),
            ("[heinzel]\nmodel = \n", "HZH012"),
            ("[heinzel]\nmax_usd = -1\n", "HZH014"),
            ("[heinzel]\nmax_wait = 7\n", "HZH014"),
            ("[heinzel]\nmax_wakes_per_tick = 0\n", "HZH014"),
            ("[heinzel]\nmodel = 3\n", "HZH014"),
        ],
    )
    def test_bad_files_are_coded_and_name_the_file(
        self, dirs: dict[str, Path], text: str, code: str
    ) -> None:
        """Unknown keys, bad TOML and bad values: a code, the file, a hint."""
        write(dirs["user"], text)
        with pytest.raises(HeinzelError) as refused:
            load(dirs)
        assert refused.value.code == code
        assert str(dirs["user"]) in refused.value.message
        assert refused.value.hint

    def test_a_price_missing_a_field_names_it_through_hz(self, tmp_path: Path) -> None:
        """A price without its output rate: `hz` names `output` itself (not only the
        price) and shows a whole price in the hint; an unknown key outside prices is not
        told about prices."""
        import subprocess
        import sys

        config = write(tmp_path / "hz.toml", '[heinzel.prices]\n"openai:gpt-x" = {input = 3.0}\n')
        env = {**os.environ, "HZ_CONFIG": str(config), "HZ_HOME": str(tmp_path / "home")}
        hz = str(Path(sys.executable).with_name("hz"))
        done = subprocess.run(
            [hz, "system", "doctor"], env=env, capture_output=True, text=True, check=False
        )
        assert done.returncode == 1
        assert "HZH014: heinzel.prices.openai:gpt-x.output is missing" in done.stderr
        assert "{input = 3.0, output = 15.0}" in done.stderr
        config.write_text("[heinzel]\nmax_usd = 'lots'\n", encoding="utf-8")
        done = subprocess.run(
            [hz, "system", "doctor"], env=env, capture_output=True, text=True, check=False
        )
        assert done.returncode == 1 and "HZH014: bad value for heinzel.max_usd" in done.stderr
        assert "a price has" not in done.stderr

    def test_a_bad_environment_value_names_the_variable(self, dirs: dict[str, Path]) -> None:
        """HZ_MAX_USD=lots is HZH014 naming env:HZ_MAX_USD."""
        with pytest.raises(HeinzelError) as refused:
            load(dirs, {"HZ_MAX_USD": "lots"})
        assert refused.value.code == "HZH014"
        assert "env:HZ_MAX_USD" in refused.value.message

    def test_a_missing_hz_config_file_is_an_error(self, dirs: dict[str, Path]) -> None:
        """HZ_CONFIG naming no file is HZH011; a missing site or user file is not."""
        with pytest.raises(HeinzelError) as refused:
            load(dirs, {"HZ_CONFIG": "absent.toml"})
        assert refused.value.code == "HZH011"

    def test_an_unreadable_file_is_coded(self, dirs: dict[str, Path]) -> None:
        """A directory where the user file should be is HZH010."""
        dirs["user"].mkdir(parents=True)
        with pytest.raises(HeinzelError) as refused:
            load(dirs)
        assert refused.value.code == "HZH010"


_LOADS = """
import sys
from pathlib import Path
from heinzel.config import load_settings
root = Path(sys.argv[1])
loaded = load_settings(env={}, cwd=root, site=None, user=root / "config.toml", data_dir=root)
assert loaded.settings.heinzel.max_wait.days == 7
print(" ".join(sorted(sys.modules)))
"""


@pytest.mark.parametrize(
    ("text", "loads"),
    [
        ('[heinzel]\nmodel = "offline"\n', False),
        ('[adapters.calendar]\nbackend = "ics"\npath = "cal.ics"\n', True),
    ],
)
def test_settings_load_the_adapters_tables_only_when_a_file_sets_one(
    tmp_path: Path, text: str, *, loads: bool
) -> None:
    """Reading the configuration loads neither the adapters' tables nor croniter unless
    a file sets an ``[adapters.*]`` table (start-up by need: every command reads it)."""
    import subprocess
    import sys

    write(tmp_path / "config.toml", text)
    done = subprocess.run(
        [sys.executable, "-c", _LOADS, str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-600:]
    loaded = set(done.stdout.split())
    assert "croniter" not in loaded
    assert ("heinzel.capabilities.configured" in loaded) is loads


def test_settings_of_plain_values_load_no_pydantic(tmp_path: Path) -> None:
    """A layer whose values are already of their types (numbers, text, lists, prices) is
    read without pydantic (an idle tick's largest import, issue 42); a duration written
    as text is pydantic's to parse."""
    import subprocess
    import sys

    plain = '[heinzel]\nmodel = "a:m"\nmax_usd = 2\n[heinzel.prices."a:m"]\ninput = 1\noutput = 2\n'
    for text, loads in ((plain, False), ('[heinzel]\nmax_wait = "3d"\n', True)):
        write(tmp_path / "config.toml", text)
        done = subprocess.run(
            [sys.executable, "-c", _LOADS.replace("days == 7", "days >= 3"), str(tmp_path)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-600:]
        assert ("pydantic" in done.stdout.split()) is loads


SURE = [
    {"home": Path("/h")},
    {"home": "/h", "model": "a:b", "max_usd": 2, "max_usd_per_day": 0.5, "max_resumes": 0},
    {"home": Path("/h"), "max_wait": timedelta(days=2), "request_timeout": timedelta(seconds=5)},
    {"home": Path("/h"), "skills": [Path("/s")], "fixture_sources": "/f", "approver": "me"},
]
UNSURE = [
    {"home": Path("/h"), "max_usd": "2.5"},  # a variable's text: pydantic coerces it
    {"home": Path("/h"), "max_wakes_per_tick": 0},
    {"home": Path("/h"), "max_wait": "3d"},
    {"home": Path("/h"), "request_timeout": timedelta(milliseconds=10)},
    {"home": Path("/h"), "max_usd": True},
    {"home": Path("/h"), "max_usd": float("nan")},
    {"model": "a"},
]


@pytest.mark.parametrize("heinzel", SURE)
def test_plain_values_give_what_the_models_give(heinzel: dict[str, object]) -> None:
    """`heinzel.config`'s own check and the pydantic models agree on plain values."""
    from heinzel.config import _by_models, _sure

    prices = {"m": {"input": 1, "output": 2.5}}
    team = {"members": ["a"], "push_retries": 2, "interval": timedelta(minutes=1)}
    runners = {"claude": {"command": "x"}}
    table = {"heinzel": {**heinzel, "prices": prices}, "team": team, "runners": runners}
    table["adapters"] = {}
    sure = _sure(table)
    assert sure is not None
    assert sure == _by_models(table, {})
    assert type(sure.heinzel.max_usd) is float and isinstance(sure.heinzel.home, Path)


@pytest.mark.parametrize("heinzel", UNSURE)
def test_any_other_value_is_left_to_the_models(heinzel: dict[str, object]) -> None:
    from heinzel.config import _sure

    table = {"heinzel": {**heinzel, "prices": {}}, "team": {}, "runners": {}, "adapters": {}}
    assert _sure(table) is None


def test_the_settings_fields_are_the_models_fields() -> None:
    """The dataclasses and the pydantic models name the same fields with the same defaults."""
    from dataclasses import MISSING, fields

    from heinzel.config import HeinzelSettings, TeamSettings
    from heinzel.config.models import HeinzelModel, TeamModel

    for ours, model in ((HeinzelSettings, HeinzelModel), (TeamSettings, TeamModel)):
        assert [one.name for one in fields(ours)] == list(model.model_fields)
        for one in fields(ours):
            default = model.model_fields[one.name].get_default(call_default_factory=True)
            if one.default is not MISSING:
                assert one.default == default, one.name
            elif one.default_factory is not MISSING:
                assert one.default_factory() == default, one.name
