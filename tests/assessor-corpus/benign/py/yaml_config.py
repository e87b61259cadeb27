import yaml

with open("config.yaml") as f:
    config = yaml.safe_load(f)
for name, settings in config.get("jobs", {}).items():
    print(name, settings.get("schedule"))
