//! The pictures of `image` blocks. A picture is read only from the tree itself (a base64
//! `data:` URI): the render worker never fetches a URL, so an `https` source, and the data
//! formats the documents cannot hold (gif, webp, svg), print as a captioned placeholder.
//! PNG and JPEG are decoded here with the libraries made for them, so that memory-api refuses
//! a picture that does not decode before it queues the render.

use base64::Engine as _;

use crate::{Block, Document, IrError};

/// The encodings a picture is embedded in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Png,
    Jpeg,
}

/// A decoded picture: the file as given, and its pixels as 8-bit RGB over white.
#[derive(Debug, Clone)]
pub struct Picture {
    pub encoding: Encoding,
    pub bytes: Vec<u8>,
    pub width: u32,
    pub height: u32,
    /// `width * height * 3` bytes.
    pub rgb: Vec<u8>,
}

impl Picture {
    /// The picture as a PNG file (the file itself when it is one).
    pub fn png(&self) -> Result<Vec<u8>, String> {
        if self.encoding == Encoding::Png {
            return Ok(self.bytes.clone());
        }
        let mut out = Vec::new();
        let mut encoder = png::Encoder::new(&mut out, self.width, self.height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
        writer
            .write_image_data(&self.rgb)
            .map_err(|e| e.to_string())?;
        writer.finish().map_err(|e| e.to_string())?;
        Ok(out)
    }
}

/// Pixels of a picture larger than this are refused (a 1 MB file can claim gigapixels).
pub const MAX_PIXELS: u64 = 40_000_000;

/// The picture of an `image` block's `src`: `Ok(None)` when it is printed as a placeholder
/// (an https URL, or a gif, webp or svg), `Err` when it claims to be a PNG or JPEG and is not.
pub fn read_picture(src: &str) -> Result<Option<Picture>, String> {
    let (encoding, data) = if let Some(data) = src.strip_prefix("data:image/png;base64,") {
        (Encoding::Png, data)
    } else if let Some(data) = src.strip_prefix("data:image/jpeg;base64,") {
        (Encoding::Jpeg, data)
    } else {
        return Ok(None);
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("is not valid base64: {e}"))?;
    let (width, height, rgb) = match encoding {
        Encoding::Png => decode_png(&bytes)?,
        Encoding::Jpeg => decode_jpeg(&bytes)?,
    };
    Ok(Some(Picture {
        encoding,
        bytes,
        width,
        height,
        rgb,
    }))
}

/// The first `image` block of `document` whose picture does not decode, with why.
pub fn check_pictures(document: &Document) -> Result<(), IrError> {
    for (b, block) in document.blocks.iter().enumerate() {
        if let Block::Image { src, .. } = block {
            read_picture(src).map_err(|problem| IrError {
                path: format!("blocks[{b}].src"),
                problem,
            })?;
        }
    }
    Ok(())
}

fn too_large(width: u32, height: u32) -> Result<(), String> {
    if width == 0 || height == 0 || u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(format!(
            "is a {width}×{height} picture: at most {MAX_PIXELS} pixels, none empty"
        ));
    }
    Ok(())
}

fn decode_png(bytes: &[u8]) -> Result<(u32, u32, Vec<u8>), String> {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder
        .read_info()
        .map_err(|e| format!("is not a PNG picture: {e}"))?;
    let (width, height) = (reader.info().width, reader.info().height);
    too_large(width, height)?;
    let mut buf = vec![0; reader.output_buffer_size()];
    let frame = reader
        .next_frame(&mut buf)
        .map_err(|e| format!("is not a PNG picture: {e}"))?;
    let pixels = &buf[..frame.buffer_size()];
    let rgb = match frame.color_type {
        png::ColorType::Rgb => pixels.to_vec(),
        png::ColorType::Rgba => pixels
            .chunks_exact(4)
            .flat_map(|p| {
                [
                    over_white(p[0], p[3]),
                    over_white(p[1], p[3]),
                    over_white(p[2], p[3]),
                ]
            })
            .collect(),
        png::ColorType::Grayscale => pixels.iter().flat_map(|&g| [g, g, g]).collect(),
        png::ColorType::GrayscaleAlpha => pixels
            .chunks_exact(2)
            .flat_map(|p| {
                let g = over_white(p[0], p[1]);
                [g, g, g]
            })
            .collect(),
        png::ColorType::Indexed => return Err("is a PNG the decoder left indexed".into()),
    };
    Ok((width, height, rgb))
}

fn over_white(value: u8, alpha: u8) -> u8 {
    let (v, a) = (u32::from(value), u32::from(alpha));
    ((v * a + 255 * (255 - a) + 127) / 255) as u8
}

fn decode_jpeg(bytes: &[u8]) -> Result<(u32, u32, Vec<u8>), String> {
    let mut decoder = jpeg_decoder::Decoder::new(std::io::Cursor::new(bytes));
    decoder
        .read_info()
        .map_err(|e| format!("is not a JPEG picture: {e}"))?;
    let info = decoder.info().ok_or("is not a JPEG picture")?;
    let (width, height) = (u32::from(info.width), u32::from(info.height));
    too_large(width, height)?;
    let pixels = decoder
        .decode()
        .map_err(|e| format!("is not a JPEG picture: {e}"))?;
    let rgb = match info.pixel_format {
        jpeg_decoder::PixelFormat::RGB24 => pixels,
        jpeg_decoder::PixelFormat::L8 => pixels.iter().flat_map(|&g| [g, g, g]).collect(),
        jpeg_decoder::PixelFormat::L16 => pixels
            .chunks_exact(2)
            .flat_map(|p| [p[0], p[0], p[0]])
            .collect(),
        jpeg_decoder::PixelFormat::CMYK32 => pixels
            .chunks_exact(4)
            .flat_map(|p| {
                let k = u32::from(255 - p[3]);
                let c = |v: u8| ((u32::from(255 - v) * k) / 255) as u8;
                [c(p[0]), c(p[1]), c(p[2])]
            })
            .collect(),
    };
    Ok((width, height, rgb))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png_data_uri(width: u32, height: u32) -> String {
        let picture = Picture {
            encoding: Encoding::Jpeg,
            bytes: Vec::new(),
            width,
            height,
            rgb: vec![200; (width * height * 3) as usize],
        };
        let png = picture.png().unwrap();
        format!(
            "data:image/png;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(png)
        )
    }

    #[test]
    fn a_png_decodes_to_its_pixels_and_other_sources_are_placeholders() {
        let picture = read_picture(&png_data_uri(3, 2)).unwrap().unwrap();
        assert_eq!((picture.width, picture.height), (3, 2));
        assert_eq!(picture.rgb, vec![200; 18]);
        assert_eq!(picture.png().unwrap(), picture.bytes);
        assert!(read_picture("https://example.com/a.png").unwrap().is_none());
        assert!(
            read_picture("data:image/gif;base64,R0lGOD")
                .unwrap()
                .is_none()
        );
        let error = read_picture("data:image/png;base64,aGVsbG8=").unwrap_err();
        assert!(error.starts_with("is not a PNG picture"), "{error}");
        let error = read_picture("data:image/jpeg;base64,aGVsbG8=").unwrap_err();
        assert!(error.starts_with("is not a JPEG picture"), "{error}");
    }

    #[test]
    fn transparency_is_composed_over_white() {
        assert_eq!(over_white(0, 0), 255);
        assert_eq!(over_white(0, 255), 0);
        assert_eq!(over_white(100, 128), 177);
    }
}
