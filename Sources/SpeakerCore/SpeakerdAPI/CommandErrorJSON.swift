/// A failed command as a script reads it when it asked for `--json`: one line on stderr,
///
///     {"error":{"code":"notReady","message":"JBL Flip 5 is out of reach; retrying in 8 s"}}
///
/// The shape is stable: `code` is a name for scripts to switch on, `message` the sentence the
/// plain line would have said. A script that parses stdout for reports and stderr for errors
/// then never has to parse English.
///
/// Codes: the daemon's own error names without `io.speakerd.Error.` and with a lower-case first
/// letter (`notReady`, `noSpeaker`, `busy`, `invalidFile`, `invalidAddress`, `unknownDevice`,
/// `notASpeaker`, `bluetooth`, `failed`), D-Bus's errors alike (`accessDenied`, `invalidArgs`,
/// `noReply`), and composer-cli's own: `unreachable` (speakerd cannot be reached), `badReply`
/// (another version answered), `local` (composer-cli's own finding: the song cannot be opened,
/// `doctor` found problems), `usage` (the command line), `failed` (anything else).
public enum CommandErrorJSON {
    /// The `code` for an error from speakerd's API.
    public static func code(for error: SpeakerdError) -> String {
        switch error {
        case .unreachable: "unreachable"
        case .badReply: "badReply"
        case .local: "local"
        case let .rejected(name, _):
            if let last = name.split(separator: ".").last, name.hasPrefix("io.speakerd.Error.") || name.hasPrefix("org.freedesktop.DBus.Error.") {
                last.prefix(1).lowercased() + last.dropFirst()
            } else {
                "failed"
            }
        }
    }

    /// The line (without its newline).
    public static func line(code: String, message: String) -> String {
        #"{"error":{"code":"# + quoted(code) + #","message":"# + quoted(message) + "}}"
    }

    /// A JSON string literal: quotes, backslashes and control characters escaped.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
