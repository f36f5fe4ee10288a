# start-up only: interpreter start, one write, exit
print("hello")
