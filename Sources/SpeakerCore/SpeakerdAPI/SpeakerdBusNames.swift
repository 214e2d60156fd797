import DBus
/// speakerd's address on D-Bus: one well-known name, one object, one versioned interface.
///
/// The interface name carries its major version (`Daemon1`): an incompatible change gets a
/// new interface beside the old one, so an older composer-cli keeps working.
public enum SpeakerdBus {
    public static let name = "io.speakerd.Daemon"
    public static let path: DBusObjectPath = "/io/speakerd/Daemon"
    public static let interface = "io.speakerd.Daemon1"

    /// Error names the API replies with; composer-cli prints their messages as they are.
    public enum ErrorName {
        public static let invalidAddress = "io.speakerd.Error.InvalidAddress"
        public static let unknownDevice = "io.speakerd.Error.UnknownDevice"
        public static let noSpeaker = "io.speakerd.Error.NoSpeaker"
        public static let notReady = "io.speakerd.Error.NotReady"
        public static let invalidFile = "io.speakerd.Error.InvalidFile"
        /// A live control (seek, loop, tempo…) that is malformed or that the song cannot take.
        public static let invalidControl = "io.speakerd.Error.InvalidControl"
        public static let bluetooth = "io.speakerd.Error.Bluetooth"
        public static let failed = "io.speakerd.Error.Failed"
        /// Too many requests pending (this client's or everyone's): refused at once, try later.
        public static let busy = "io.speakerd.Error.Busy"
        /// `Connect` of a device BlueZ shows to be no speaker (a phone); `ConnectAnyDevice` takes it.
        public static let notASpeaker = "io.speakerd.Error.NotASpeaker"
    }
}
