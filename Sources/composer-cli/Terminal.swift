import Glibc

/// What composer-cli asks of the terminal it runs on.
enum Terminal {
    /// The width in columns of standard output's terminal (80 when it cannot be asked).
    static func width() -> Int {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    /// Whether both ends are a person at a terminal (what an interactive picker needs).
    static var isInteractive: Bool { isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1 }
}
