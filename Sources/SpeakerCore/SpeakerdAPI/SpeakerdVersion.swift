/// speakerd's release version, in one place.
///
/// Named after the product rather than a module: a type named like its module shadows the module
/// name, so `Module.X` could no longer name the module's types.
public enum SpeakerdVersion {
    /// The version reported by `speakerd --version`, `composer-cli --version` and the D-Bus API.
    public static let current = "0.1.0"
}
