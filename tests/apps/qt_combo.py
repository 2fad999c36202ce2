#!/usr/bin/python3
# A Qt5 combo box with a label (its buddy), for ui_act select: every change
# of the combo's current text is appended to the records file as one JSON
# line {"size": text}; "ready" first. Qt names the combo by its current
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
w.resize(360, 120)
w.move(0, 0)
w.show()
note({'ready': combo.currentText()})
app.exec_()
