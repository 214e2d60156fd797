import Testing
@testable import SpeakerCore

@Test("the package builds") func packageBuilds() { #expect(!SpeakerCore.version.isEmpty) }
