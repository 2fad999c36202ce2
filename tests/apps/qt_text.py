#!/usr/bin/python3
# A Qt5 plain text edit for the input tests: Escape appends the text to the
# records file (one JSON string per line) and clears it.
import json, sys
from PyQt5.QtCore import Qt
from PyQt5.QtWidgets import QApplication, QPlainTextEdit

out = sys.argv[1]

class Edit(QPlainTextEdit):
    def keyPressEvent(self, e):
        if e.key() == Qt.Key_Escape:
            with open(out, 'a', encoding='utf-8') as f:
                # toPlainText() turns U+00A0 into a space: the raw text,
                # with its block separators (U+2029) as the newlines they were.
                f.write(json.dumps(self.document().toRawText().replace('\u2029', '\n')) + '\n')
            self.setPlainText('')
            return
        super().keyPressEvent(e)

app = QApplication(sys.argv[:1])
w = Edit()
w.setWindowTitle('deskd qt text')
w.resize(900, 600)
w.move(0, 0)
w.show()
w.activateWindow()
w.setFocus()
open(out + '.ready', 'w').close()
app.exec_()
