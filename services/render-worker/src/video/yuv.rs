//! A composed frame as ffmpeg's `yuv420p` (planar Y, then U and V at half the width and
//! height), the pixel format the video is encoded in. Converting here, once per frame that
//! changed, spares ffmpeg converting every one of a scene's identical frames from RGBA, and
//! the pipe carries 12 bits a pixel instead of 32.
//!
//! The conversion is BT.601 in limited range, ffmpeg's default for RGBA → yuv420p, with 8-bit
//! integer coefficients; each chroma sample is the mean of its 2×2 pixels (ffmpeg filters
//! them, which differs by a few levels at sharp edges only).

/// The size of a `yuv420p` frame of `width` × `height` (chroma planes rounded up).
pub fn frame_len(width: usize, height: usize) -> usize {
    width * height + 2 * width.div_ceil(2) * height.div_ceil(2)
}

/// Writes the opaque RGBA picture `rgba` of `width` × `height` into `out` as `yuv420p`
/// (`out` is [`frame_len`] bytes).
pub fn from_rgba(rgba: &[u8], width: usize, height: usize, out: &mut [u8]) {
    debug_assert_eq!(rgba.len(), width * height * 4);
    debug_assert_eq!(out.len(), frame_len(width, height));
    let (luma, chroma) = out.split_at_mut(width * height);
    for (row, y_row) in rgba
        .chunks_exact(width * 4)
        .zip(luma.chunks_exact_mut(width))
    {
        for (px, y) in row.chunks_exact(4).zip(y_row.iter_mut()) {
            *y = luma_of(i32::from(px[0]), i32::from(px[1]), i32::from(px[2]));
        }
    }
    let chroma_width = width.div_ceil(2);
    let (u_plane, v_plane) = chroma.split_at_mut(chroma.len() / 2);
    let rows = rgba.chunks(width * 4 * 2);
    let planes = u_plane
        .chunks_exact_mut(chroma_width)
        .zip(v_plane.chunks_exact_mut(chroma_width));
    for (pair, (u_row, v_row)) in rows.zip(planes) {
        let (top, bottom) = pair.split_at(width * 4);
        // An odd last row is its own pair.
        let bottom = if bottom.is_empty() { top } else { bottom };
        for (i, (u, v)) in u_row.iter_mut().zip(v_row.iter_mut()).enumerate() {
            let (r, g, b) = average(top, bottom, i * 2, width);
            (*u, *v) = chroma_of(r, g, b);
        }
    }
}

/// The mean colour of the 2×2 pixels from column `x` of two rows (one column at an odd
/// right edge).
fn average(top: &[u8], bottom: &[u8], x: usize, width: usize) -> (i32, i32, i32) {
    let next = if x + 1 < width { x + 1 } else { x };
    let sum = |c: usize| {
        i32::from(top[x * 4 + c])
            + i32::from(top[next * 4 + c])
            + i32::from(bottom[x * 4 + c])
            + i32::from(bottom[next * 4 + c])
    };
    ((sum(0) + 2) >> 2, (sum(1) + 2) >> 2, (sum(2) + 2) >> 2)
}

fn luma_of(r: i32, g: i32, b: i32) -> u8 {
    ((66 * r + 129 * g + 25 * b + 128) >> 8) as u8 + 16
}

fn chroma_of(r: i32, g: i32, b: i32) -> (u8, u8) {
    let u = ((-38 * r - 74 * g + 112 * b + 128) >> 8) + 128;
    let v = ((112 * r - 94 * g - 18 * b + 128) >> 8) + 128;
    (u as u8, v as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn picture(width: usize, height: usize, colour: [u8; 3]) -> Vec<u8> {
        (0..width * height)
            .flat_map(|_| [colour[0], colour[1], colour[2], 255])
            .collect()
    }

    #[test]
    fn limited_range_bt601_for_black_white_and_the_primaries() {
        let cases = [
            ([0, 0, 0], (16, 128, 128)),
            ([255, 255, 255], (235, 128, 128)),
            ([255, 0, 0], (82, 90, 240)),
            ([0, 255, 0], (144, 54, 34)),
            ([0, 0, 255], (41, 240, 110)),
        ];
        for (colour, (y, u, v)) in cases {
            let mut out = vec![0; frame_len(4, 2)];
            from_rgba(&picture(4, 2, colour), 4, 2, &mut out);
            assert_eq!(out[..8], [y; 8], "luma of {colour:?}: {out:?}");
            assert_eq!(out[8..10], [u; 2], "U of {colour:?}: {out:?}");
            assert_eq!(out[10..], [v; 2], "V of {colour:?}: {out:?}");
        }
    }

    #[test]
    fn chroma_averages_each_two_by_two_block_and_odd_edges_stand_alone() {
        // 3 × 3: white on the left two columns, black in the right one; the bottom row white.
        let mut rgba = picture(3, 3, [255, 255, 255]);
        for row in 0..2 {
            rgba[(row * 3 + 2) * 4..(row * 3 + 3) * 4].copy_from_slice(&[0, 0, 0, 255]);
        }
        let mut out = vec![0; frame_len(3, 3)];
        assert_eq!(out.len(), 9 + 2 * 4);
        from_rgba(&rgba, 3, 3, &mut out);
        assert_eq!(out[..9], [235, 235, 16, 235, 235, 16, 235, 235, 235]);
        // Grey blocks have neutral chroma whatever their brightness.
        assert_eq!(out[9..], [128; 8], "{out:?}");
    }

    #[test]
    fn a_colour_block_s_chroma_is_the_colour_s() {
        let mut rgba = picture(4, 2, [0, 0, 0]);
        for i in [0, 1, 4, 5] {
            rgba[i * 4..i * 4 + 4].copy_from_slice(&[255, 0, 0, 255]);
        }
        let mut out = vec![0; frame_len(4, 2)];
        from_rgba(&rgba, 4, 2, &mut out);
        assert_eq!(out[8..10], [90, 128], "U: {out:?}");
        assert_eq!(out[10..], [240, 128], "V: {out:?}");
    }
}
