/// SpeakerCore: everything in speakerd that has logic. The executables only parse, wire and run.
public enum SpeakerCore {
    /// The version reported by `speakerd --version`, `composer-cli --version` and the D-Bus API.
    public static let version = "0.1.0"
}
