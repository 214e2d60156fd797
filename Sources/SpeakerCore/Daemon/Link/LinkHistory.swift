/// What the reducer remembers of the speaker's links and of the user's say in them.
///
/// Links are counted as each comes up: the speaker's care acts once per link (a profile nudge, a
/// first volume), and `status` shows its note for the link now. The user's choices (a `connect`,
/// `disconnect` or `forget`) are counted too: a `connect` that waited (for start-up to reach the
/// adapter) gives way to a later choice, and so do start-up's own choices (the known speakers,
/// auto-pick): once the user has spoken, start-up stops choosing. The target the link last came
/// up for is kept with the choices then: the same target up again with no new choice between is
/// speakerd's own reconnect, not "as you asked" once more.
struct LinkHistory {
    /// The speaker's links so far.
    private(set) var linkUps = 0
    /// The user's connects, disconnects and forgets so far.
    private(set) var userChoices = 0
    private var lastUp: (target: LinkSnapshot.Target, choices: Int)?

    /// The user made a choice (connect, disconnect, forget): what waited on an earlier one gives way.
    mutating func userChose() {
        userChoices += 1
    }

    /// The link came up (to `target`): counted. Returns whether it is speakerd's own reconnect:
    /// the target it last came up for, with no choice of the user's since.
    mutating func cameUp(to target: LinkSnapshot.Target?) -> Bool {
        var reconnect = false
        if let target {
            if let lastUp, lastUp.target == target, lastUp.choices == userChoices { reconnect = true }
            lastUp = (target, userChoices)
        }
        linkUps += 1
        return reconnect
    }
}
