import SpeakerdAPI
/// The small value types a `DaemonConfiguration` is made of, each parsed from the text a user
/// writes in the config file or on the command line.


