"""The config: one dataclass schema per group (model, data, training), registered in Hydra's ConfigStore and
checked at startup (schema.validate: a bad value is one ConfigError line, exit 2), the command line's fixes
before Hydra parses it (cli), and what Hydra needs to compose (compose, paths). Loads no torch, so the
command line answers in a second. Imports only base."""
