#!/usr/bin/python3
# Runs inside xterm for the input tests: the tty in raw mode, every byte
# kept; ESC appends what came before it (UTF-8, \r as \n) to the records
# file as one JSON string per line.
import json, os, sys, termios, tty

out = sys.argv[1]
fd = sys.stdin.fileno()
tty.setraw(fd)
open(out + '.ready', 'w').close()
buf = b''
while True:
    chunk = os.read(fd, 65536)
    if not chunk:
        break
    for b in chunk:
        if b == 0x1b:
            text = buf.decode('utf-8', errors='replace').replace('\r', '\n')
            with open(out, 'a', encoding='utf-8') as f:
                f.write(json.dumps(text) + '\n')
            buf = b''
        else:
            buf += bytes([b])
