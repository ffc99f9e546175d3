import sys
ROOT = __import__('pathlib').Path(__file__).resolve().parents[3]; sys.path.insert(0, str(ROOT))
import sim.profile as P
extra = [float(x) * 3600 for x in sys.argv[2].split(',')]
P.WINDOWS = (None,) + tuple(sorted((set(P.WINDOWS) - {None}) | set(extra)))
print("windows:", P.WINDOWS)
sys.path.insert(0, str(ROOT / 'bench'))
import sim_twin
sys.exit(sim_twin.main([sys.argv[1]]))
