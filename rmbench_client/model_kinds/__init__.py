"""The model kinds under evaluation: reward model, DPO policy/reference pair, generative judge, baseline.

Each turns a prompt's responses into raw values through its servers (`base.ModelKind`); `factory` builds the
one a config names; `chat_templates` renders a role's client-side chat template.
"""
