"""The settings: read once from the environment, checked, and chosen per program.
Knows every program's settings by name, and nothing of what the programs do with them.

    settings.py          Settings, read once from the environment (12-factor)
    settings_checks.py   what makes a setting's value bad, one check per subject
    program_settings.py  which settings each program reads
"""
