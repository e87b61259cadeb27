payload = "print('maintenance done')"
ｅｘｅｃ(payload)
