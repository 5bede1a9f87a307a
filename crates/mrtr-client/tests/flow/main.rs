//! flow: the client driving flows (in-process and scripted transports), and hostile servers.

mod driver;
mod hostile;
mod legacy_stdio;
