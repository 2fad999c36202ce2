#!/usr/bin/python3
# A Tk 8.6 text widget for the typing tests: Escape appends the widget's text
# to the records file (one JSON string per line) and clears it.
# FILE.ready appears once the widget has the focus.
import json
import sys
import tkinter

out = sys.argv[1]
root = tkinter.Tk()
root.title('deskd tk text')
root.geometry('900x600+0+0')
text = tkinter.Text(root, undo=False)
text.pack(fill='both', expand=True)


def on_escape(_event):
    # The Text widget always ends with a newline of its own: "end-1c".
    with open(out, 'a', encoding='utf-8') as f:
        f.write(json.dumps(text.get('1.0', 'end-1c')) + '\n')
    text.delete('1.0', 'end')
    return 'break'


def on_tab(_event):
    text.insert('insert', '\t')
    return 'break'


text.bind('<Escape>', on_escape)
text.bind('<Tab>', on_tab)


def ready():
    text.focus_force()
    open(out + '.ready', 'w').close()


root.after(200, ready)
root.mainloop()
