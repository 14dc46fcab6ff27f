from simweb.effects import Effect
TASKS = []
