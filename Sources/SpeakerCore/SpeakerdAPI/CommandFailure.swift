import Glibc

/// How speakerd and composer-cli end: help and `--version` print in full, every failure is
/// exactly one line on stderr ("composer-cli: …") and a non-zero exit.
///
/// ArgumentParser's default `main()` adds usage lines to each error; both executables replace
/// it with `run(program:_:outcome:)`. The parsing itself stays in the executables (the library
/// modules do not link ArgumentParser); they only say what an error means through `outcome`.
public enum CommandFailure {
    /// What a thrown error ends the process with.
    public enum Outcome: Sendable, Equatable {
        /// Help or `--version`: the text goes to stdout in full and the exit status is 0.
        case fullText(String)
        /// A failure: the first line of `message` goes to stderr, then exit with `exitStatus`.
        case failure(message: String, exitStatus: Int32)
        /// A failure whose one line is already logged (speakerd's journal line, with its
        /// priority): exit with `exitStatus` and print nothing more.
        case logged(exitStatus: Int32)
        /// A failure of a command run with `--json`: its one stderr line is JSON
        /// (``CommandErrorJSON``), then exit with `exitStatus`.
        case jsonFailure(code: String, message: String, exitStatus: Int32)
    }

    /// Runs `body` (parse, then run the command); an error thrown by it ends the process the
    /// way `outcome` describes. Returns normally when `body` does. Runs in the caller's
    /// isolation (the executables' main actor), so neither closure crosses an actor boundary.
    public static func run(program: String, isolation: isolated (any Actor)? = #isolation,
                           _ body: () async throws -> Void, outcome: (any Error) -> Outcome) async {
        do {
            try await body()
        } catch {
            switch outcome(error) {
            case .fullText(let text):
                print(text)
                exit(0)
            case let .failure(message, exitStatus):
                writeToStandardError(line(program: program, message: message, exitStatus: exitStatus) + "\n")
                exit(exitStatus == 0 ? 1 : exitStatus)
            case .logged(let exitStatus):
                exit(exitStatus == 0 ? 1 : exitStatus)
            case let .jsonFailure(code, message, exitStatus):
                // The same sentence as the plain line, without the program's name.
                let plain = line(program: program, message: message, exitStatus: exitStatus)
                writeToStandardError(CommandErrorJSON.line(code: code, message: String(plain.dropFirst(program.count + 2))) + "\n")
                exit(exitStatus == 0 ? 1 : exitStatus)
            }
        }
    }

    /// The stderr line for a failure: the program's name, then the message's first line without
    /// ArgumentParser's "Error: " prefix; an empty message still says that the command failed.
    public static func line(program: String, message: String, exitStatus: Int32) -> String {
        var text = message.split(separator: "\n", omittingEmptySubsequences: true).first.map(String.init) ?? ""
        if text.hasPrefix("Error: ") { text.removeFirst(7) }
        if text.unicodeScalars.allSatisfy(isBlank) { text = "failed (exit status \(exitStatus))" }
        return "\(program): \(text)"
    }

    /// Straight to descriptor 2 (unbuffered, as the process exits next); a failing stderr
    /// (closed, or a full pipe that errors) loses the line, as there is nowhere else to say it.
    private static func writeToStandardError(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            bytes = bytes.dropFirst(written)
        }
    }

    /// What Foundation's `CharacterSet.whitespaces` holds: tab and the space separators (Zs).
    private static func isBlank(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "\t" || scalar.properties.generalCategory == .spaceSeparator
    }
}
