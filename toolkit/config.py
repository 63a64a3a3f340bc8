"""Job config loading: file lookup, `${ENV}` substitution, parsing and `[name]` tags.

Follows AI Toolkit's `toolkit/config.py` because users keep their configs and command
lines when they switch: `python run.py foo` finds `config/foo.yaml`, and any path AI
Toolkit resolves resolves to the same file here.
"""

import json
import os
import re
from collections import OrderedDict
from typing import Mapping, Optional, Union

import yaml

from toolkit import paths

POSSIBLE_EXTENSIONS = (".json", ".jsonc", ".yaml", ".yml")

_ENV_VAR = re.compile(r"\$\{([^}]+)\}")

# PyYAML follows YAML 1.1, where `1e-4` (no dot) is a string; configs write learning
# rates that way and expect a float.
_FLOAT = re.compile(
    r"""^(?:
     [-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |\.[0-9_]+(?:[eE][-+][0-9]+)?
    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)


class _ConfigLoader(yaml.SafeLoader):
    """SafeLoader that reads exponent floats and keeps mapping order as OrderedDict."""


_ConfigLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))
_ConfigLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    lambda loader, node: OrderedDict(loader.construct_pairs(node, deep=True)),
)


def get_cfg_file_path(config_file_path: str) -> str:
    """Find a config file; the first hit wins.

    The order is AI Toolkit's: `config/<arg>` + each extension (probed only when
    `config/<arg>` itself does not exist), `<arg>` as given, `<cwd>/<arg>`. AI Toolkit never
    uses an exact `config/<arg>` hit (so `run.py foo.yaml` misses `config/foo.yaml`); here
    it is tried last, which finds that file without changing any lookup AI Toolkit resolves.
    """
    in_config_dir = os.path.join(paths.CONFIG_ROOT, config_file_path)
    candidates = []
    if not os.path.exists(in_config_dir):
        candidates += [in_config_dir + ext for ext in POSSIBLE_EXTENSIONS]
    candidates += [config_file_path, os.path.join(os.getcwd(), config_file_path), in_config_dir]
    for candidate in candidates:
        if os.path.isfile(candidate):
            return candidate
    raise ValueError(
        f"Could not find config file {config_file_path!r} "
        f"(looked in {paths.CONFIG_ROOT} with extensions {', '.join(POSSIBLE_EXTENSIONS)}, "
        f"then as given, then in {os.getcwd()})"
    )


def replace_env_vars_in_string(text: str, source: str = "<string>") -> str:
    """Substitute `${VAR}` before parsing, so secrets never have to live in the file."""

    def lookup(match: re.Match) -> str:
        var = match.group(1)
        value = os.environ.get(var)
        if value is None:
            raise ValueError(f"Environment variable {var} is not set (referenced as ${{{var}}} in {source})")
        return value

    return _ENV_VAR.sub(lookup, text)


def load_config_file(path: str) -> OrderedDict:
    """Read, substitute and parse one config file by its extension."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in POSSIBLE_EXTENSIONS:
        raise ValueError(
            f"Config file {path} has unsupported extension {ext!r}; use one of {', '.join(POSSIBLE_EXTENSIONS)}"
        )
    with open(path, "r", encoding="utf-8") as f:
        text = replace_env_vars_in_string(f.read(), path)
    if ext in (".json", ".jsonc"):
        data = json.loads(text, object_pairs_hook=OrderedDict)
    else:
        data = yaml.load(text, Loader=_ConfigLoader)
    if not isinstance(data, Mapping):
        raise ValueError(f"Config file {path} must contain a mapping at the top level")
    return data


def preprocess_config(config: Mapping, name: Optional[str] = None) -> OrderedDict:
    """Check the required keys and replace the `[name]` tag everywhere in the config."""
    if "job" not in config:
        raise ValueError('config file error. Missing "job" key')
    if "config" not in config or not isinstance(config["config"], Mapping):
        raise ValueError('config file error. Missing "config" section')
    if name is None:
        if "name" not in config["config"]:
            raise ValueError('config file error. Missing "config.name" key (or pass --name)')
        name = str(config["config"]["name"])
    # Escaped so a name with quotes or backslashes cannot break the JSON round-trip.
    escaped = json.dumps(name)[1:-1]
    text = json.dumps(config).replace("[name]", escaped)
    return json.loads(text, object_pairs_hook=OrderedDict)


def get_config(config_file_path_or_dict: Union[str, os.PathLike, Mapping], name: Optional[str] = None) -> OrderedDict:
    """Load a config from a name, path or dict, ready for `get_job`."""
    if isinstance(config_file_path_or_dict, Mapping):
        return preprocess_config(config_file_path_or_dict, name)
    path = get_cfg_file_path(os.fspath(config_file_path_or_dict))
    return preprocess_config(load_config_file(path), name)
