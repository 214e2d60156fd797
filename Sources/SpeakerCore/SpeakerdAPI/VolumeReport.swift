/// What `composer-cli volume` shows: the connected speaker's volume and the device it is set on.
///
/// JSON keys are a public contract: `percent` (0…100; a PulseAudio sink boosted past 100 % shows
/// more), `address`, `name` and `device` (the sink or PCM, as `audioPath` in status names it).
public struct VolumeReport: Codable, Equatable, Sendable {
    public var percent: Int
    public var address: String
    public var name: String
    public var device: String

    public init(percent: Int, address: String, name: String, device: String) {
        self.percent = percent
        self.address = address
        self.name = name
        self.device = device
    }

    enum CodingKeys: String, CodingKey { case percent, address, name, device }

    /// One line for a terminal.
    public var humanReadable: String {
        "Volume: \(percent) % on \(name) (\(address)), \(device)"
    }
}
