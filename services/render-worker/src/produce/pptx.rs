//! pptx: the OOXML parts of a presentation written through `quick-xml` (text escaped) into a
//! `zip` package. A title slide, then a slide per heading of level 1 or 2 and per page break,
//! continued on further slides when its text does not fit.

use std::io::{Cursor, Write};

use producible::Document;
use producible::images::{Encoding, Picture, read_picture};
use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};
use zip::ZipWriter;
use zip::write::SimpleFileOptions;

use super::layout::{self, Line};

const LINES_PER_SLIDE: usize = 14;
const CHARS: usize = 90;
const NS_A: &str = "http://schemas.openxmlformats.org/drawingml/2006/main";
const NS_R: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
const NS_P: &str = "http://schemas.openxmlformats.org/presentationml/2006/main";
const REL: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";

#[derive(Default)]
struct Slide {
    title: String,
    lines: Vec<(String, bool)>,
    /// A slide with a picture holds it and its caption only.
    picture: Option<Picture>,
}

fn slides(document: &Document) -> Vec<Slide> {
    let mut slides = vec![Slide {
        title: document.title.clone(),
        ..Slide::default()
    }];
    let mut current = document.title.clone();
    for line in layout::lines(document, CHARS) {
        let (text, bold) = match line {
            Line::Heading(level, text) if level <= 2 => {
                current = text.clone();
                slides.push(Slide {
                    title: text,
                    ..Slide::default()
                });
                continue;
            }
            Line::Heading(_, text) => (text, true),
            Line::Text(text) | Line::Code(text) => (text, false),
            Line::Row { cells, header } => (cells.join("  |  "), header),
            Line::Image { src, alt } => match read_picture(&src) {
                Ok(Some(picture)) => {
                    slides.push(Slide {
                        title: current.clone(),
                        lines: vec![(alt, false)],
                        picture: Some(picture),
                    });
                    continue;
                }
                _ => (format!("[image: {alt}]"), false),
            },
            Line::Blank => continue,
            Line::PageBreak => {
                slides.push(Slide {
                    title: current.clone(),
                    ..Slide::default()
                });
                continue;
            }
        };
        let full = slides
            .last()
            .is_some_and(|s| s.lines.len() >= LINES_PER_SLIDE || s.picture.is_some());
        if full {
            slides.push(Slide {
                title: format!("{current} (continued)"),
                ..Slide::default()
            });
        }
        if let Some(slide) = slides.last_mut() {
            slide.lines.push((text, bold));
        }
    }
    slides
}

type Xml = Writer<Cursor<Vec<u8>>>;
type R = std::io::Result<()>;

fn start(w: &mut Xml, name: &str, attrs: &[(&str, &str)]) -> R {
    w.write_event(Event::Start(
        BytesStart::new(name).with_attributes(attrs.iter().copied()),
    ))
}

fn end(w: &mut Xml, name: &str) -> R {
    w.write_event(Event::End(BytesEnd::new(name)))
}

fn empty(w: &mut Xml, name: &str, attrs: &[(&str, &str)]) -> R {
    w.write_event(Event::Empty(
        BytesStart::new(name).with_attributes(attrs.iter().copied()),
    ))
}

/// A text box at (x, y) of (cx, cy) EMU holding `paragraphs`.
fn text_box(
    w: &mut Xml,
    id: u32,
    name: &str,
    at: [&str; 4],
    size: &str,
    paragraphs: &[(String, bool)],
) -> R {
    let id = id.to_string();
    start(w, "p:sp", &[])?;
    start(w, "p:nvSpPr", &[])?;
    empty(w, "p:cNvPr", &[("id", &id), ("name", name)])?;
    empty(w, "p:cNvSpPr", &[("txBox", "1")])?;
    empty(w, "p:nvPr", &[])?;
    end(w, "p:nvSpPr")?;
    start(w, "p:spPr", &[])?;
    start(w, "a:xfrm", &[])?;
    empty(w, "a:off", &[("x", at[0]), ("y", at[1])])?;
    empty(w, "a:ext", &[("cx", at[2]), ("cy", at[3])])?;
    end(w, "a:xfrm")?;
    start(w, "a:prstGeom", &[("prst", "rect")])?;
    empty(w, "a:avLst", &[])?;
    end(w, "a:prstGeom")?;
    end(w, "p:spPr")?;
    start(w, "p:txBody", &[])?;
    empty(w, "a:bodyPr", &[("wrap", "square")])?;
    empty(w, "a:lstStyle", &[])?;
    for (text, bold) in paragraphs {
        start(w, "a:p", &[])?;
        start(w, "a:r", &[])?;
        empty(
            w,
            "a:rPr",
            &[
                ("lang", "en-US"),
                ("sz", size),
                ("b", if *bold { "1" } else { "0" }),
            ],
        )?;
        start(w, "a:t", &[])?;
        w.write_event(Event::Text(BytesText::new(text)))?;
        end(w, "a:t")?;
        end(w, "a:r")?;
        end(w, "a:p")?;
    }
    if paragraphs.is_empty() {
        empty(w, "a:p", &[])?;
    }
    end(w, "p:txBody")?;
    end(w, "p:sp")
}

/// The slide's picture (relationship `rId2`), as large as the body area allows at its aspect.
fn picture_frame(w: &mut Xml, picture: &Picture, alt: &str) -> R {
    const LEFT: u64 = 457_200;
    const TOP: u64 = 1_524_000;
    const MAX_W: u64 = 11_277_600;
    const MAX_H: u64 = 4_267_200;
    let (pw, ph) = (u64::from(picture.width), u64::from(picture.height));
    let (cx, cy) = if pw * MAX_H > ph * MAX_W {
        (MAX_W, MAX_W * ph / pw)
    } else {
        (MAX_H * pw / ph, MAX_H)
    };
    let (x, cx, cy) = (
        (LEFT + (MAX_W - cx) / 2).to_string(),
        cx.max(1).to_string(),
        cy.max(1).to_string(),
    );
    start(w, "p:pic", &[])?;
    start(w, "p:nvPicPr", &[])?;
    empty(
        w,
        "p:cNvPr",
        &[("id", "4"), ("name", "Picture"), ("descr", alt)],
    )?;
    start(w, "p:cNvPicPr", &[])?;
    empty(w, "a:picLocks", &[("noChangeAspect", "1")])?;
    end(w, "p:cNvPicPr")?;
    empty(w, "p:nvPr", &[])?;
    end(w, "p:nvPicPr")?;
    start(w, "p:blipFill", &[])?;
    empty(w, "a:blip", &[("r:embed", "rId2")])?;
    start(w, "a:stretch", &[])?;
    empty(w, "a:fillRect", &[])?;
    end(w, "a:stretch")?;
    end(w, "p:blipFill")?;
    start(w, "p:spPr", &[])?;
    start(w, "a:xfrm", &[])?;
    empty(w, "a:off", &[("x", &x), ("y", &TOP.to_string())])?;
    empty(w, "a:ext", &[("cx", &cx), ("cy", &cy)])?;
    end(w, "a:xfrm")?;
    start(w, "a:prstGeom", &[("prst", "rect")])?;
    empty(w, "a:avLst", &[])?;
    end(w, "a:prstGeom")?;
    end(w, "p:spPr")?;
    end(w, "p:pic")
}

/// The media part name of a picture (by slide number) and its extension.
fn media_name(slide: usize, picture: &Picture) -> String {
    let ext = match picture.encoding {
        Encoding::Png => "png",
        Encoding::Jpeg => "jpeg",
    };
    format!("media/image{slide}.{ext}")
}

fn slide_xml(slide: &Slide) -> std::io::Result<Vec<u8>> {
    let mut w = Writer::new(Cursor::new(Vec::new()));
    w.write_event(Event::Decl(BytesDecl::new(
        "1.0",
        Some("UTF-8"),
        Some("yes"),
    )))?;
    start(
        &mut w,
        "p:sld",
        &[("xmlns:a", NS_A), ("xmlns:r", NS_R), ("xmlns:p", NS_P)],
    )?;
    start(&mut w, "p:cSld", &[])?;
    start(&mut w, "p:spTree", &[])?;
    start(&mut w, "p:nvGrpSpPr", &[])?;
    empty(&mut w, "p:cNvPr", &[("id", "1"), ("name", "")])?;
    empty(&mut w, "p:cNvGrpSpPr", &[])?;
    empty(&mut w, "p:nvPr", &[])?;
    end(&mut w, "p:nvGrpSpPr")?;
    empty(&mut w, "p:grpSpPr", &[])?;
    text_box(
        &mut w,
        2,
        "Title",
        ["457200", "274638", "11277600", "1143000"],
        "3200",
        &[(slide.title.clone(), true)],
    )?;
    match &slide.picture {
        None => text_box(
            &mut w,
            3,
            "Body",
            ["457200", "1524000", "11277600", "5029200"],
            "1600",
            &slide.lines,
        )?,
        Some(picture) => {
            picture_frame(
                &mut w,
                picture,
                slide.lines.first().map_or("", |l| l.0.as_str()),
            )?;
            text_box(
                &mut w,
                3,
                "Caption",
                ["457200", "5943600", "11277600", "609600"],
                "1400",
                &slide.lines,
            )?;
        }
    }
    end(&mut w, "p:spTree")?;
    end(&mut w, "p:cSld")?;
    start(&mut w, "p:clrMapOvr", &[])?;
    empty(&mut w, "a:masterClrMapping", &[])?;
    end(&mut w, "p:clrMapOvr")?;
    end(&mut w, "p:sld")?;
    Ok(w.into_inner().into_inner())
}

fn relationships(rels: &[(&str, &str, &str)]) -> std::io::Result<Vec<u8>> {
    let mut w = Writer::new(Cursor::new(Vec::new()));
    w.write_event(Event::Decl(BytesDecl::new(
        "1.0",
        Some("UTF-8"),
        Some("yes"),
    )))?;
    start(
        &mut w,
        "Relationships",
        &[(
            "xmlns",
            "http://schemas.openxmlformats.org/package/2006/relationships",
        )],
    )?;
    for (id, kind, target) in rels {
        let kind = format!("{REL}/{kind}");
        empty(
            &mut w,
            "Relationship",
            &[("Id", id), ("Type", &kind), ("Target", target)],
        )?;
    }
    end(&mut w, "Relationships")?;
    Ok(w.into_inner().into_inner())
}

fn presentation(count: usize) -> std::io::Result<Vec<u8>> {
    let mut w = Writer::new(Cursor::new(Vec::new()));
    w.write_event(Event::Decl(BytesDecl::new(
        "1.0",
        Some("UTF-8"),
        Some("yes"),
    )))?;
    start(
        &mut w,
        "p:presentation",
        &[("xmlns:a", NS_A), ("xmlns:r", NS_R), ("xmlns:p", NS_P)],
    )?;
    start(&mut w, "p:sldMasterIdLst", &[])?;
    empty(
        &mut w,
        "p:sldMasterId",
        &[("id", "2147483648"), ("r:id", "rId1")],
    )?;
    end(&mut w, "p:sldMasterIdLst")?;
    start(&mut w, "p:sldIdLst", &[])?;
    for i in 0..count {
        let (id, rid) = ((256 + i).to_string(), format!("rId{}", i + 3));
        empty(&mut w, "p:sldId", &[("id", &id), ("r:id", &rid)])?;
    }
    end(&mut w, "p:sldIdLst")?;
    empty(&mut w, "p:sldSz", &[("cx", "12192000"), ("cy", "6858000")])?;
    empty(&mut w, "p:notesSz", &[("cx", "6858000"), ("cy", "9144000")])?;
    end(&mut w, "p:presentation")?;
    Ok(w.into_inner().into_inner())
}

fn content_types(count: usize) -> std::io::Result<Vec<u8>> {
    const CT: &str = "application/vnd.openxmlformats-officedocument.presentationml";
    let mut w = Writer::new(Cursor::new(Vec::new()));
    w.write_event(Event::Decl(BytesDecl::new(
        "1.0",
        Some("UTF-8"),
        Some("yes"),
    )))?;
    start(
        &mut w,
        "Types",
        &[(
            "xmlns",
            "http://schemas.openxmlformats.org/package/2006/content-types",
        )],
    )?;
    empty(
        &mut w,
        "Default",
        &[
            ("Extension", "rels"),
            (
                "ContentType",
                "application/vnd.openxmlformats-package.relationships+xml",
            ),
        ],
    )?;
    empty(
        &mut w,
        "Default",
        &[("Extension", "xml"), ("ContentType", "application/xml")],
    )?;
    for (extension, content_type) in [("png", "image/png"), ("jpeg", "image/jpeg")] {
        empty(
            &mut w,
            "Default",
            &[("Extension", extension), ("ContentType", content_type)],
        )?;
    }
    let mut parts = vec![
        (
            "/ppt/presentation.xml".to_owned(),
            format!("{CT}.presentation.main+xml"),
        ),
        (
            "/ppt/slideMasters/slideMaster1.xml".to_owned(),
            format!("{CT}.slideMaster+xml"),
        ),
        (
            "/ppt/slideLayouts/slideLayout1.xml".to_owned(),
            format!("{CT}.slideLayout+xml"),
        ),
        (
            "/ppt/theme/theme1.xml".to_owned(),
            "application/vnd.openxmlformats-officedocument.theme+xml".to_owned(),
        ),
    ];
    for i in 1..=count {
        parts.push((
            format!("/ppt/slides/slide{i}.xml"),
            format!("{CT}.slide+xml"),
        ));
    }
    for (name, ct) in &parts {
        empty(
            &mut w,
            "Override",
            &[("PartName", name), ("ContentType", ct)],
        )?;
    }
    end(&mut w, "Types")?;
    Ok(w.into_inner().into_inner())
}

pub fn produce(document: &Document) -> Result<Vec<u8>, String> {
    build(document).map_err(|e| e.to_string())
}

fn build(document: &Document) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    let slides = slides(document);
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default();
    let part = |zip: &mut ZipWriter<Cursor<Vec<u8>>>, name: &str, bytes: &[u8]| {
        zip.start_file(name, options)?;
        zip.write_all(bytes)?;
        Ok::<_, Box<dyn std::error::Error>>(())
    };
    part(
        &mut zip,
        "[Content_Types].xml",
        &content_types(slides.len())?,
    )?;
    part(
        &mut zip,
        "_rels/.rels",
        &relationships(&[("rId1", "officeDocument", "ppt/presentation.xml")])?,
    )?;
    part(
        &mut zip,
        "ppt/presentation.xml",
        &presentation(slides.len())?,
    )?;
    let names: Vec<String> = (1..=slides.len())
        .map(|i| format!("slides/slide{i}.xml"))
        .collect();
    let ids: Vec<String> = (1..=slides.len())
        .map(|i| format!("rId{}", i + 2))
        .collect();
    let mut rels = vec![
        ("rId1", "slideMaster", "slideMasters/slideMaster1.xml"),
        ("rId2", "theme", "theme/theme1.xml"),
    ];
    rels.extend(
        ids.iter()
            .zip(&names)
            .map(|(id, name)| (id.as_str(), "slide", name.as_str())),
    );
    part(
        &mut zip,
        "ppt/_rels/presentation.xml.rels",
        &relationships(&rels)?,
    )?;
    part(
        &mut zip,
        "ppt/slideMasters/slideMaster1.xml",
        MASTER.as_bytes(),
    )?;
    part(
        &mut zip,
        "ppt/slideMasters/_rels/slideMaster1.xml.rels",
        &relationships(&[
            ("rId1", "slideLayout", "../slideLayouts/slideLayout1.xml"),
            ("rId2", "theme", "../theme/theme1.xml"),
        ])?,
    )?;
    part(
        &mut zip,
        "ppt/slideLayouts/slideLayout1.xml",
        LAYOUT.as_bytes(),
    )?;
    part(
        &mut zip,
        "ppt/slideLayouts/_rels/slideLayout1.xml.rels",
        &relationships(&[("rId1", "slideMaster", "../slideMasters/slideMaster1.xml")])?,
    )?;
    part(&mut zip, "ppt/theme/theme1.xml", THEME.as_bytes())?;
    for (i, slide) in slides.iter().enumerate() {
        part(
            &mut zip,
            &format!("ppt/slides/slide{}.xml", i + 1),
            &slide_xml(slide)?,
        )?;
        let mut rels = vec![("rId1", "slideLayout", "../slideLayouts/slideLayout1.xml")];
        let media = slide.picture.as_ref().map(|p| media_name(i + 1, p));
        let target = media.as_ref().map(|m| format!("../{m}"));
        if let (Some(picture), Some(media), Some(target)) = (&slide.picture, &media, &target) {
            part(&mut zip, &format!("ppt/{media}"), &picture.bytes)?;
            rels.push(("rId2", "image", target));
        }
        part(
            &mut zip,
            &format!("ppt/slides/_rels/slide{}.xml.rels", i + 1),
            &relationships(&rels)?,
        )?;
    }
    Ok(zip.finish()?.into_inner())
}

// The fixed parts (no document text): a blank master, its one layout and a theme.
const MASTER: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<p:sldMaster xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"><p:cSld><p:bg><p:bgRef idx="1001"><a:schemeClr val="bg1"/></p:bgRef></p:bg><p:spTree><p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/></p:spTree></p:cSld><p:clrMap bg1="lt1" tx1="dk1" bg2="lt2" tx2="dk2" accent1="accent1" accent2="accent2" accent3="accent3" accent4="accent4" accent5="accent5" accent6="accent6" hlink="hlink" folHlink="folHlink"/><p:sldLayoutIdLst><p:sldLayoutId id="2147483649" r:id="rId1"/></p:sldLayoutIdLst></p:sldMaster>"#;

const LAYOUT: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<p:sldLayout xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" type="blank" preserve="1"><p:cSld name="Blank"><p:spTree><p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/></p:spTree></p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sldLayout>"#;

const THEME: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<a:theme xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" name="Plain"><a:themeElements><a:clrScheme name="Plain"><a:dk1><a:srgbClr val="000000"/></a:dk1><a:lt1><a:srgbClr val="FFFFFF"/></a:lt1><a:dk2><a:srgbClr val="1F2937"/></a:dk2><a:lt2><a:srgbClr val="F3F4F6"/></a:lt2><a:accent1><a:srgbClr val="2563EB"/></a:accent1><a:accent2><a:srgbClr val="DC2626"/></a:accent2><a:accent3><a:srgbClr val="16A34A"/></a:accent3><a:accent4><a:srgbClr val="9333EA"/></a:accent4><a:accent5><a:srgbClr val="EA580C"/></a:accent5><a:accent6><a:srgbClr val="0891B2"/></a:accent6><a:hlink><a:srgbClr val="2563EB"/></a:hlink><a:folHlink><a:srgbClr val="7C3AED"/></a:folHlink></a:clrScheme><a:fontScheme name="Plain"><a:majorFont><a:latin typeface="Calibri"/><a:ea typeface=""/><a:cs typeface=""/></a:majorFont><a:minorFont><a:latin typeface="Calibri"/><a:ea typeface=""/><a:cs typeface=""/></a:minorFont></a:fontScheme><a:fmtScheme name="Plain"><a:fillStyleLst><a:solidFill><a:schemeClr val="phClr"/></a:solidFill><a:solidFill><a:schemeClr val="phClr"/></a:solidFill><a:solidFill><a:schemeClr val="phClr"/></a:solidFill></a:fillStyleLst><a:lnStyleLst><a:ln w="9525"><a:solidFill><a:schemeClr val="phClr"/></a:solidFill></a:ln><a:ln w="25400"><a:solidFill><a:schemeClr val="phClr"/></a:solidFill></a:ln><a:ln w="38100"><a:solidFill><a:schemeClr val="phClr"/></a:solidFill></a:ln></a:lnStyleLst><a:effectStyleLst><a:effectStyle><a:effectLst/></a:effectStyle><a:effectStyle><a:effectLst/></a:effectStyle><a:effectStyle><a:effectLst/></a:effectStyle></a:effectStyleLst><a:bgFillStyleLst><a:solidFill><a:schemeClr val="phClr"/></a:solidFill><a:solidFill><a:schemeClr val="phClr"/></a:solidFill><a:solidFill><a:schemeClr val="phClr"/></a:solidFill></a:bgFillStyleLst></a:fmtScheme></a:themeElements></a:theme>"#;
