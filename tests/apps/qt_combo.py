#!/usr/bin/python3
# Qt5 combo boxes with labels (their buddies), for ui_act select: every
# change of a combo's current text is appended to the records file as one
# JSON line ({"size": text} or {"colour": text}); "ready" first. Qt names the combo by its current
# text, so the label is what names it for a human.
import json, sys
from PyQt5.QtWidgets import QApplication, QComboBox, QFormLayout, QLabel, QWidget

out = sys.argv[1]

def note(obj):
    with open(out, 'a', encoding='utf-8') as f:
        f.write(json.dumps(obj) + '\n')

app = QApplication(sys.argv[:1])
w = QWidget()
w.setWindowTitle('deskd qt combo')
form = QFormLayout(w)
combo = QComboBox()
combo.addItems(['Small', 'Medium', 'Large', 'Extra large'])
label = QLabel('&Size')
label.setBuddy(combo)
form.addRow(label, combo)
combo.currentTextChanged.connect(lambda t: note({'size': t}))
# A second combo made before its label: the label does not come before it
# among the window's children, only its buddy relation names it.
colour = QComboBox(w)
colour.addItems(['Red', 'Green', 'Blue'])
colour_label = QLabel('&Colour', w)
colour_label.setBuddy(colour)
form.addRow(colour_label, colour)
colour.currentTextChanged.connect(lambda t: note({'colour': t}))
w.resize(360, 160)
w.move(0, 0)
w.show()
note({'ready': combo.currentText()})
app.exec_()
