# 50 x subprocess.run(["true"]) (PATH search: /usr/local/bin/true is tried
# first, then /usr/bin/true; under ward the bench policy allows /usr/bin/true)
import subprocess

for _ in range(50):
    subprocess.run(["true"], check=True)
print("ok", 50)
