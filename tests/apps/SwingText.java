// A Java Swing text area for the input tests (issue 25, INPUT2.md I4): one
// window with a JTextArea that has the focus; Escape appends the area's text
// to the records file (argv[0], one JSON string per line, UTF-8) and clears
// it. "<records>.ready" appears once the area has the focus.
// Compiled at test time: javac -d DIR SwingText.java; java -cp DIR SwingText OUT
import java.awt.event.KeyAdapter;
import java.awt.event.KeyEvent;
import java.awt.event.WindowAdapter;
import java.awt.event.WindowEvent;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import javax.swing.JFrame;
import javax.swing.JScrollPane;
import javax.swing.JTextArea;
import javax.swing.SwingUtilities;

public class SwingText {
	// JSON string: quotes, backslash and control characters escaped, the
	// rest as is (surrogate pairs become UTF-8 of their code point).
	static String json(String s) {
		StringBuilder b = new StringBuilder("\"");
		for (int i = 0; i < s.length(); i++) {
			char c = s.charAt(i);
			if (c == '"' || c == '\\')
				b.append('\\').append(c);
			else if (c < 0x20)
				b.append(String.format("\\u%04x", (int) c));
			else
				b.append(c);
		}
		return b.append('"').toString();
	}

	public static void main(String[] args) {
		String out = args[0];
		SwingUtilities.invokeLater(() -> {
			JFrame frame = new JFrame("deskd swing text");
			JTextArea area = new JTextArea();
			area.addKeyListener(new KeyAdapter() {
				@Override
				public void keyPressed(KeyEvent e) {
					if (e.getKeyCode() != KeyEvent.VK_ESCAPE)
						return;
					e.consume();
					try (FileOutputStream f = new FileOutputStream(out, true)) {
						f.write((json(area.getText()) + "\n").getBytes(StandardCharsets.UTF_8));
					} catch (IOException x) {
						System.err.println("SwingText: " + x);
					}
					area.setText("");
				}
			});
			frame.add(new JScrollPane(area));
			frame.setSize(900, 600);
			frame.setLocation(0, 0);
			frame.setDefaultCloseOperation(JFrame.EXIT_ON_CLOSE);
			frame.addWindowListener(new WindowAdapter() {
				@Override
				public void windowOpened(WindowEvent e) {
					area.requestFocusInWindow();
					try {
						Files.write(Paths.get(out + ".ready"), new byte[0]);
					} catch (IOException x) {
						System.err.println("SwingText: " + x);
					}
				}
			});
			frame.setVisible(true);
		});
	}
}
