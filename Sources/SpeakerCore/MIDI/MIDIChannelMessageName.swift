/// Names of channel messages for error messages ("expected a data byte in a note-on message").
enum MIDIChannelMessageName {
    static func of(_ kind: UInt8) -> String {
        switch kind {
        case 0x80: "a note-off message"
        case 0x90: "a note-on message"
        case 0xA0: "a polyphonic pressure message"
        case 0xB0: "a control change message"
        case 0xC0: "a program change message"
        case 0xD0: "a channel pressure message"
        default: "a pitch bend message"
        }
    }
}
