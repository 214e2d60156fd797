import Glibc

/// Standard input switched to raw mode for the scan picker (keys arrive one by one, unechoed;
/// Ctrl-C arrives as a byte the picker treats as quit), restored by `restore()`: the command
/// restores it on every way out, so the shell never gets a terminal left in raw mode.
final class RawTerminal {
    private var saved = termios()
    private var active = false

    init?() {
        guard tcgetattr(STDIN_FILENO, &saved) == 0 else { return nil }
        var raw = saved
        cfmakeraw(&raw)
        raw.c_oflag = saved.c_oflag  // keep output processing: "\n" still starts a new line
        guard tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) == 0 else { return nil }
        active = true
        write(STDOUT_FILENO, "\u{1B}[?25l", 6)  // hide the cursor while the list is shown
    }

    /// The bytes of the next keystroke(s); empty at end of input.
    func read() -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            return count > 0 ? Array(buffer[..<count]) : []
        }
    }

    func restore() {
        guard active else { return }
        active = false
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
        write(STDOUT_FILENO, "\u{1B}[?25h", 6)
    }

    deinit { restore() }
}
