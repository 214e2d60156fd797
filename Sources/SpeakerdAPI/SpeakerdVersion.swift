/// speakerd's release version, in one place.
///
/// Named after the product rather than the module: a type called `SpeakerCore` inside the module
/// `SpeakerCore` shadows the module name, so `SpeakerCore.X` could no longer name the module's types.
public enum SpeakerdVersion {
    /// The version reported by `speakerd --version`, `composer-cli --version` and the D-Bus API.
    public static let current = "0.1.0"
}
