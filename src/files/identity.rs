//! A file's identity beyond its path: device and inode, so that a reader can tell the file it
//! stored an offset for from another one put at the same path (a rotation, a compaction).

use std::fs::Metadata;

/// Device and inode of an open file, where the platform has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileId {
    /// Device number.
    pub device: Option<i64>,
    /// Inode number.
    pub inode: Option<i64>,
}

impl FileId {
    /// The identity in `meta`.
    pub fn of(meta: &Metadata) -> FileId {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            // SQLite integers are signed; the bit pattern is what matters.
            FileId {
                device: Some(meta.dev() as i64),
                inode: Some(meta.ino() as i64),
            }
        }
        #[cfg(not(unix))]
        {
            let _ = meta;
            FileId::default()
        }
    }

    /// True when the platform gave a device and inode.
    pub fn is_known(&self) -> bool {
        self.device.is_some() && self.inode.is_some()
    }
}
