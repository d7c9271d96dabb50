//! Decimal integers written without `format!`: the output writes several per request.

/// The digits of `value`, in `buf`.
pub(crate) fn digits(mut value: u64, buf: &mut [u8; 20]) -> &str {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    // Only ASCII digits were written.
    std::str::from_utf8(&buf[at..]).expect("ASCII digits")
}

#[cfg(test)]
mod tests {
    #[test]
    fn digits_match_display() {
        for v in [0, 7, 10, 99, 1_000_000_007, u64::MAX] {
            assert_eq!(super::digits(v, &mut [0; 20]), v.to_string());
        }
    }
}
